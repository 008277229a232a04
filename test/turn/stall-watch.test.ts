/**
 * The stall watch's rule (issue 69): a turn is stalled when it has not moved (told no event) for
 * longer than the bound of its state's work plus the margin, or when a write of its queue has
 * run longer than `storage.outageMs` plus the margin; never in a waiting state.
 */
import { StallWatch, type StallWatchPorts } from '../../src/turn/stall-watch'

/** A turn as the watch reads it, each part settable by the test. */
function turnIn(state: string, retryDelayMs = 0) {
  const turn = { state, retryDelayMs, emitted: 0, runningSince: null as number | null }
  const ports: StallWatchPorts = {
    now: () => ({ state: turn.state, retryDelayMs: turn.retryDelayMs }),
    events: { get emitted() { return turn.emitted } },
    queue: { get runningSince() { return turn.runningSince } },
    bounds: { outageMs: 1000, streamIdleTimeoutMs: 5000, toolsTimeoutMs: () => 7000 },
  }
  return { turn, watch: new StallWatch(ports, 0) }
}

const margin = 2000

test.each([
  ['streaming', 5000, 'the model stream'],
  ['compacting', 5000, 'the summary request'],
  ['tool-running', 7000, 'its tool calls'],
  ['step-gate', 1000, 'the step gate (its reads of the database)'],
])("in '%s' it is stalled once it has not moved for its bound (%i ms) and the margin", (state, bound, waitingOn) => {
  const { watch } = turnIn(state)
  expect(watch.check(bound + margin, margin)).toBeUndefined()
  expect(watch.check(bound + margin + 1, margin)).toEqual({ state, waitingOn, since: 0, boundMs: bound })
})

test('an event is a move: the silence is counted from the check that saw it', () => {
  const { turn, watch } = turnIn('streaming')
  turn.emitted = 1
  expect(watch.check(6000, margin)).toBeUndefined()
  expect(watch.check(6000 + 5000 + margin, margin)).toBeUndefined()
  expect(watch.check(6000 + 5000 + margin + 1, margin)).toMatchObject({ since: 6000 })
})

test("a retry's wait is bounded by its own delay", () => {
  const { watch } = turnIn('retry-waiting', 30_000)
  expect(watch.check(30_000 + margin, margin)).toBeUndefined()
  expect(watch.check(30_000 + margin + 1, margin)).toMatchObject({ waitingOn: "a retry's delay", boundMs: 30_000 })
})

test('a waiting state never stalls (a person or the world sets its pace); a write in it does', () => {
  const { turn, watch } = turnIn('awaiting-approval')
  expect(watch.check(10_000_000, margin)).toBeUndefined()
  turn.runningSince = 10_000_000
  expect(watch.check(10_000_000 + 1000 + margin, margin)).toBeUndefined()
  expect(watch.check(10_000_000 + 1000 + margin + 1, margin)).toEqual({ state: 'awaiting-approval', waitingOn: 'a write to the database', since: 10_000_000, boundMs: 1000 })
})

test('a write is bounded from its start even while the turn moves (the stream goes on, its rows do not)', () => {
  const { turn, watch } = turnIn('streaming')
  turn.runningSince = 100
  for (let t = 0; t <= 3100; t += 500) {
    turn.emitted++
    expect(watch.check(t, margin)).toBeUndefined()
  }
  turn.emitted++
  expect(watch.check(3101, margin)).toMatchObject({ waitingOn: 'a write to the database', since: 100 })
})

test("no bound where nothing works: 'idle', 'interrupted' and the final states", () => {
  for (const state of ['idle', 'interrupted', 'completed', 'failed', 'aborted']) expect(turnIn(state).watch.check(1e9, margin)).toBeUndefined()
})
