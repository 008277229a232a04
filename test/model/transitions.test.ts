/**
 * Model-based tests: every edge of the turn chart walked against the REAL engine (scripted
 * HTTP server on loopback, SQLite file). Paths come from a breadth-first search on the real machine;
 * the recipes in support/recipes.ts turn each event of a path into server replies, tool
 * behaviours, aborts or storage failures. See docs/testing.md.
 */
import { allEdgeKeys, shortestPathsByEdge, type ModelEvent } from './support/chart-model'
import { CoverageRecorder } from './support/coverage'
import { handoffEdges, handoffTestFile, recoveryEdges, recoveryTestFile } from '../crash/recovery-edges'
import { recipes } from './support/recipes'
import { rigDefaults, startRig, type Rig } from './support/rig'
import { completePath, walk } from './support/walk'
import { chartEdges } from '../../src/chart/chart-edges'

const input = {
  turnId: 'trn_model',
  sessionId: 'ses_model',
  autoCompact: rigDefaults.compaction?.auto ?? true,
  maxCompactions: rigDefaults.compaction?.maxPerTurn ?? 2,
  maxSteps: rigDefaults.maxSteps,
}
const edges = allEdgeKeys()
const events: ModelEvent[] = Object.values(recipes).flatMap((recipe) => recipe.events)
const paths = shortestPathsByEdge(input, events)
const coverage = new CoverageRecorder(__filename)

// One engine, server and database for the walks (each walks its own session and turn; a walk
// that passed ended its turn, which its invariants check). A walk that failed, or left replies
// unanswered, may have left something behind for the next: its rig is closed, and the next walk
// gets a fresh one.
let rig: Rig | undefined
let clean = false
afterEach(async () => {
  if (rig && (!clean || rig.server.pending() > 0)) {
    await rig.close()
    rig = undefined
  }
  clean = false
})
afterAll(async () => {
  await rig?.close()
  coverage.write()
})

test('the edge list is the machine\'s: M edges, unique names, every recipe names a real edge', () => {
  expect(edges.length).toBe(chartEdges().length)
  expect(new Set(edges).size).toBe(edges.length)
  const unknown = Object.keys(recipes).filter((key) => !edges.includes(key))
  expect(unknown).toEqual([])
})

describe.each(edges)('%s', (edge) => {
  test('walked against the real engine', async () => {
    if (recoveryEdges.includes(edge)) {
      // Taken only by a crash: walked with a real child process in test/crash, which fails
      // when one of these edges does not show in its persisted logs.
      coverage.record(`${recoveryTestFile} (a SIGKILLed child process and a recovering engine)`, [edge])
      return
    }
    if (handoffEdges.includes(edge)) {
      // Taken only by a handoff: walked with a real child process SIGTERMed in test/crash.
      coverage.record(`${handoffTestFile} (a SIGTERMed child process handing its turn over)`, [edge])
      return
    }
    if (!recipes[edge]) {
      throw new Error(`no recipe for edge "${edge}": add an entry to test/model/support/recipes.ts (see docs/testing.md)`)
    }
    const path = paths.get(edge)
    if (!path) {
      throw new Error(`the path search found no path ending with edge "${edge}" using the recipes' events: give its recipe an event that takes it`)
    }
    const steps = completePath(input, path)
    rig ??= await startRig()
    const walked = await walk(rig, steps)
    expect(walked.edges).toContain(edge)
    coverage.record(expect.getState().currentTestName ?? edge, walked.edges)
    clean = true
  })
})

test('every edge of the chart was walked by a test (transition coverage M/M)', () => {
  const covered = coverage.covered()
  const missing = edges.filter((edge) => !covered.has(edge))
  if (missing.length) throw new Error(`edges walked by no test:\n  ${missing.join('\n  ')}`)
  expect(covered.size).toBe(edges.length)
})
