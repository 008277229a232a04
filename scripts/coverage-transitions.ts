/**
 * `npm run coverage:transitions`: every edge of the turn chart with the tests that walked it
 * (from the records the model tests write to tmp/transition-coverage/), then
 * `transitions covered: N/M`. Exits 1 below M/M.
 */
import { chartEdges } from '../src/chart/chart-edges'
import { edgeKey } from '../test/model/support/chart-model'
import { readCoverage } from '../test/model/support/coverage'

const edges = chartEdges().map(edgeKey)
const walkedBy = new Map<string, string[]>(edges.map((edge) => [edge, []]))
const records = readCoverage()
for (const record of records) {
  for (const [test, walked] of Object.entries(record.walks)) {
    for (const edge of walked) {
      const by = walkedBy.get(edge)
      if (by) by.push(`${record.file} › ${test}`)
      else console.warn(`(walked an edge the machine no longer has: ${edge})`)
    }
  }
}
if (records.length === 0) console.warn('no coverage records in tmp/transition-coverage: run the model tests first (npx jest test/model)')
let covered = 0
for (const edge of edges) {
  const by = walkedBy.get(edge)!
  if (by.length) covered += 1
  console.log(`${by.length ? '✓' : '✗'} ${edge}`)
  // the first test that walked it (the edge's own walk when there is one), and how many more
  const own = by.find((name) => name.includes(edge)) ?? by[0]
  console.log(by.length ? `    walked by ${own}${by.length > 1 ? ` (+${by.length - 1} more)` : ''}` : '    walked by no test')
}
console.log(`\ntransitions covered: ${covered}/${edges.length}`)
process.exitCode = covered === edges.length ? 0 : 1
