/**
 * The example of docs/debugging-and-evals.md (examples/rerun/rerun.ts, `npm run example:rerun`)
 * runs and says what the page says it shows.
 */
import { main } from '../../examples/rerun/rerun'

test('examples/rerun/rerun.ts: a stored turn re-run with no provider call, an eval with its first difference, a cassette played back', async () => {
  const lines: string[] = []
  await main((line) => lines.push(line))
  expect(lines).toEqual([
    '1. production: completed, "It is 21 °C in Lisbon." (3 provider calls)',
    '2. re-run from the recorded responses: completed, the same parts: true (still 3 provider calls)',
    '3. eval: part 2 differs: reasoning "The weather tool knows." → tool',
    '4. cassette: weather.cassette.json holds 3 calls; played back: completed, "It is 21 °C in Lisbon." (0 provider calls)',
  ])
})
