// Issue 54's A/B with each build in its own processes: CPU and allocation per step of a turn of
// 10 steps × 10 deltas with 9 tool calls of 1 KB (the in-process workload's `step` shape, the
// model streaming from memory), on SQLite `:memory:` and on a file.
//
// Why processes: bench/in-process.mjs interleaves the builds in one process, where they share
// one copy of xstate, kysely and the AI SDK (dist/ folders resolve the same node_modules), so
// one build's use of them (a chart provided per turn: new state nodes every turn) changes the
// code V8 runs for the other. Here a process runs one build only, as an app does; the processes
// alternate (the order rotated each round), so both builds meet the same stretch of the machine.
//
//   BENCH_DISTS=A=/tmp/start/dist,B=dist node bench/step-ab.mjs [rounds=5] [turns=150]
//   (BENCH_STEP_WARMUP=<turns> changes the warm-up: 30 was this script's until issue 54's end)
//
// Prints, per build and database, the median over its processes of the CPU per step (user +
// system, no profiler running) and of the bytes allocated per step (the sampling heap profiler,
// 512 B), the ratio to the first build, and the load average at the run's start and end.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Session } from 'node:inspector/promises'
import { aiSdkTools, turnchartCalls } from './systems.mjs'
import { memoryModel } from './memory-model.mjs'
import { SHAPES, STEADY_WARMUP } from './in-process.mjs'
import { stats } from './lib.mjs'

const here = fileURLToPath(import.meta.url)
// Warm-up turns: enough for V8 to be done optimizing (in-process.mjs says why).
const WARMUP = Number(process.env.BENCH_STEP_WARMUP ?? STEADY_WARMUP)

/** One process, one build: `{ cpuUsPerStep, kbPerStep }` of `turns` turns after the warm-up. */
async function measureOne(dist, database, turns) {
  const index = path.join(path.resolve(dist), 'cjs/src/index.js')
  const { createEngine } = createRequire(index)(index)
  const dir = database === 'file' ? fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-step-ab-')) : undefined
  const shape = SHAPES.step
  const engine = await createEngine({ database: dir ? path.join(dir, 'bench.db') : ':memory:', model: memoryModel(shape), tools: await aiSdkTools() })
  const system = turnchartCalls(engine)
  const expected = shape.steps * shape.deltas
  const turn = async (i) => {
    const session = await system.newSession()
    let deltas = 0
    await system.turn(session, `turn ${i}: fetch the documents`, () => deltas++)
    if (deltas !== expected) throw new Error(`${deltas} deltas, expected ${expected}`)
  }
  try {
    for (let i = 0; i < WARMUP; i++) await turn(i)
    const c0 = process.cpuUsage()
    for (let i = 0; i < turns; i++) await turn(i)
    const c = process.cpuUsage(c0)
    const session = new Session()
    session.connect()
    await session.post('HeapProfiler.enable')
    await session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
    const sampled = Math.ceil(turns / 2)
    for (let i = 0; i < sampled; i++) await turn(i)
    const { profile } = await session.post('HeapProfiler.stopSampling')
    session.disconnect()
    const bytes = (node) => (node.selfSize ?? 0) + (node.children ?? []).reduce((sum, child) => sum + bytes(child), 0)
    return { cpuUsPerStep: (c.user + c.system) / (turns * shape.steps), kbPerStep: bytes(profile.head) / 1024 / (sampled * shape.steps) }
  } finally {
    await system.close()
    if (dir) fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Runs `measureOne` in a new process (this file with `--one`). */
function inProcessOf(dist, database, turns) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [here, '--one', dist, database, String(turns)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`step-ab child (${dist}, ${database}) exited with ${code}`))))
  })
}

function buildsOf(spec) {
  if (!spec) throw new Error('BENCH_DISTS=A=<dist>,B=<dist> names the builds to compare')
  return spec.split(',').map((item) => {
    const [label, dist] = item.split('=')
    return { label, dist: path.resolve(dist) }
  })
}

async function main() {
  const [rounds = '5', turns = '150'] = process.argv.slice(2)
  const builds = buildsOf(process.env.BENCH_DISTS)
  const loadAtStart = os.loadavg()[0]
  const results = {}
  for (let round = 0; round < Number(rounds); round++) {
    const order = builds.slice(round % builds.length).concat(builds.slice(0, round % builds.length))
    for (const database of ['memory', 'file']) {
      for (const build of order) {
        const r = await inProcessOf(build.dist, database, Number(turns))
        ;((results[database] ??= {})[build.label] ??= []).push(r)
        console.error(`round ${round + 1} ${database} ${build.label}: ${r.cpuUsPerStep.toFixed(0)} µs, ${r.kbPerStep.toFixed(1)} KB per step`)
      }
    }
  }
  for (const [database, byBuild] of Object.entries(results)) {
    const first = byBuild[builds[0].label]
    const median = (runs, key) => stats(runs.map((r) => r[key])).median
    const line = builds.map(({ label }) => {
      const runs = byBuild[label]
      const cpu = median(runs, 'cpuUsPerStep')
      const kb = median(runs, 'kbPerStep')
      return `${label} ${cpu.toFixed(0)} µs (×${(cpu / median(first, 'cpuUsPerStep')).toFixed(3)}), ${kb.toFixed(1)} KB (×${(kb / median(first, 'kbPerStep')).toFixed(3)})`
    })
    console.log(`${database.padEnd(6)} per step, median of ${rounds} processes each: ${line.join('  ')}`)
  }
  console.log(`load average ${loadAtStart.toFixed(2)} at the start, ${os.loadavg()[0].toFixed(2)} at the end (${os.cpus().length} cores)`)
}

if (process.argv[2] === '--one') {
  const [, , , dist, database, turns] = process.argv
  process.stdout.write(JSON.stringify(await measureOne(dist, database, Number(turns))))
} else {
  await main()
}
