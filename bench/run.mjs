// npm run bench (root): all workloads; prints one report and writes docs/benchmarks.md.
// Environment knobs (for quick runs): BENCH_W1_ROUNDS, BENCH_W2_TURNS, BENCH_W3_SESSIONS,
// BENCH_ONLY=inproc,w1,w2,w3,ttfd,trees,pg1,control,w5,profile (subset of workloads; inproc: bench/in-process.mjs,
// the model from memory, per step and per delta, BENCH_INPROC_ROUNDS; ttfd: bench/first-delta.mjs;
// trees: bench/w-trees.mjs;
// pg1, w5: bench/pg.mjs; control: bench/control-latency.mjs; "profile": the CPU profiles of workloads
// 1 and 3), BENCH_PROFILE_TURNS (workload 1 turns per profiled system), BENCH_W2_SYSTEMS and
// BENCH_SYSTEMS (workloads 2 and 3: system ids, comma-separated, or "all"), BENCH_TTFD_ROUNDS, BENCH_TREE_ROUNDS,
// BENCH_OUT (report path; default docs/benchmarks.md), BENCH_RENDER_ONLY=1 (render the page again
// from the last saved run, e.g. after editing NOTES.md; or =<file in bench/results> for that run), BENCH_COMBINE (how many runs the targets are
// judged on, default 3), BENCH_W3_EXEC_ARGV.
//
// Several runs: every run is kept in bench/results/<time>.json (its report and the commit it ran
// on). The page's target table shows the figure of each of the last BENCH_COMBINE runs made on the
// same commit (this one included) and judges each target on their median; the sections below it
// show this run's tables. Three `npm run bench` in a row on one commit make the page of three runs.
//
// Honesty: after every turn the scripted server's lane must have received exactly one model call
// per scripted step and have no reply left; otherwise the run stops with ModelCallMismatchError
// (exit code 1) and writes no page.
//
// The report: report.<workload> for w1, w2, w3, w4 (storage, from w1's turns) and, from
// bench/pg.mjs, pg1 and w5. Each carries `targets`, a list of TargetResult:
//
//   /** @typedef {{ target: string, measured: string, met: boolean | null, value?: number, limit?: { max?: number, below?: number }, unit?: string }} TargetResult */
//   target:   what is promised, in words, e.g. "turnchart file ≤ 1.15× the doStream loop (median ms/turn)"
//   measured: the number(s) behind the verdict, e.g. "1.32× (102 ms / 77.1 ms)"
//   met:      true / false; null for information that is not a target (e.g. the LangGraph ratio)
//   value, limit, unit: the judged number and its bound (value ≤ max, value < below), so that
//             several runs are judged on the median of their values; without them a target is
//             met over several runs when it is met in every one.
//
// render() lists every report[key].targets, for key in SUMMARY (below), in one table at the top
// of the page ("not run" when report[key] is missing), and each workload's section repeats its
// own with renderTargets(). A new workload: `report.pg1 = await phase('…', run)` in the main
// block (timed on the page), its section in render() where the comment says, `pg1` in BENCH_ONLY.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fork } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { createSystems, SYSTEM_NAMES } from './systems.mjs'
import { startServer, turnScript, stats, measureDb, instrumentWrites, writeCounts, fmtMs, fmtBytes, expectModelCalls, ModelCallMismatchError, W1_SCRIPT } from './lib.mjs'
import { summarizeProfile, orderedCategories, isTurnchart } from './profile-summary.mjs'
import { workloadPg1, workload5, renderPg1, renderW5, pg1Targets, w5Targets } from './pg.mjs'
import { firstDelta, firstDeltaTargets, renderFirstDelta } from './first-delta.mjs'
import { controlLatency, controlLatencyTargets, renderControlLatency } from './control-latency.mjs'
import { runTrees, treesTargets, renderTrees } from './w-trees.mjs'
import { inProcess, inProcessTargets, renderInProcess } from './in-process.mjs'
import { execFileSync } from 'node:child_process'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '..')
const env = (name, fallback) => Number(process.env[name] ?? fallback)
const only = (process.env.BENCH_ONLY ?? 'inproc,w1,w2,w3,ttfd,trees,pg1,control,w5,profile').split(',')

// Sizes chosen to keep a full run under 10 minutes on the 2-core machine (said on the page).
const W1 = { ...W1_SCRIPT, warmup: 3, rounds: env('BENCH_W1_ROUNDS', 15) }
const W2 = { turns: env('BENCH_W2_TURNS', 100), deltas: 100, window: 10 }
const W3 = { sessions: env('BENCH_W3_SESSIONS', 200), steps: 3, deltas: 100, delayMs: 20 }
// Workloads 2 and 3 run fewer systems by default, to fit the time (said on the page): not the
// three streamText loops (workload 1 measures that path), and workload 3 not turnchart :memory:.
const STREAMTEXT_LOOPS = ['hand', 'stopWhen', 'agent']
const systemsFrom = (name, fallback) => (process.env[name] === 'all' ? SYSTEM_NAMES : (process.env[name]?.split(',') ?? fallback))
const W2_SYSTEMS = systemsFrom('BENCH_W2_SYSTEMS', SYSTEM_NAMES.filter((id) => !STREAMTEXT_LOOPS.includes(id)))
const W3_SYSTEMS = systemsFrom('BENCH_SYSTEMS', ['floor', 'doStream', 'langgraph', 'tc-file'])
// CPU profiles (each system in its own child process under --cpu-prof, after the timed runs).
const PROFILE = { systems: ['tc-file', 'doStream'], w1Turns: env('BENCH_PROFILE_TURNS', 10), w1Warmup: 3, intervalUs: 500 }
const leftOut = (ids) => SYSTEM_NAMES.filter((id) => !ids.includes(id))
const REDUCED = [
  ...(W1.rounds < 25 ? [`workload 1: ${W1.rounds} measured rounds (was 25)`] : []),
  ...(leftOut(W2_SYSTEMS).length ? [`workload 2: without ${leftOut(W2_SYSTEMS).join(', ')} (the streamText loops, whose path workload 1 measures; BENCH_W2_SYSTEMS=all runs them)`] : []),
  ...(leftOut(W3_SYSTEMS).length ? [`workload 3: without ${leftOut(W3_SYSTEMS).join(', ')} (30–60 s each here under 200 sessions; BENCH_SYSTEMS=all runs them)`] : []),
]
// Order of the summary table; pg1 and w5 come from bench/pg.mjs (report.pg1 / report.w5).
const SUMMARY = [
  ['inproc', 'In process: per step and per delta'],
  ['w1', 'Workload 1: tool loop'],
  ['w3', 'Workload 3: many sessions'],
  ['w4', 'Workload 4: storage per turn'],
  ['w2', 'Workload 2: long session'],
  ['ttfd', 'Time to first delta'],
  ['trees', 'Run trees: a parent and three children'],
  ['pg1', 'Workload 1 on PostgreSQL'],
  ['control', 'Control latency across engines on PostgreSQL'],
  ['w5', 'Workload 5: scale-out on PostgreSQL'],
]

/** A PostgreSQL workload's result with its targets for the summary (none when it was skipped). */
const withTargets = (result, targets) => ({ ...result, targets: targets(result) })

const started = Date.now()
const log = (...args) => console.error(`[${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s]`, ...args)
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-bench-'))
const noop = () => {}

// Snapshot the build: other work on this checkout may rebuild (and first delete) dist/ while we
// run. A node_modules symlink keeps module resolution (and the better-sqlite3 copy) the root's.
const snapshot = path.join(here, 'out/turnchart')
fs.rmSync(snapshot, { recursive: true, force: true })
fs.mkdirSync(snapshot, { recursive: true })
fs.cpSync(path.join(root, 'dist'), path.join(snapshot, 'dist'), { recursive: true })
fs.symlinkSync(path.join(root, 'node_modules'), path.join(snapshot, 'node_modules'), 'dir')
// dist/cjs is CommonJS; without this the bench's "type": "module" would apply to it.
fs.writeFileSync(path.join(snapshot, 'package.json'), JSON.stringify({ name: 'turnchart-snapshot', private: true, type: 'commonjs' }))
process.env.TURNCHART_DIST = path.join(snapshot, 'dist')

instrumentWrites()
const server = await startServer()
log(`scripted server (pid ${server.pid}) at ${server.url}; databases in ${dir}`)
const report = { w1: null, w2: null, w3: null, w4: null, profiles: null }

report.ranAt = new Date().toISOString()
report.machine = machineNow()
report.loadBefore = os.loadavg()[0]
report.commit = gitCommit()
const results = path.join(here, 'results')
if (process.env.BENCH_RENDER_ONLY) {
  // Render a saved run again (e.g. after editing NOTES.md): the last one, or the one named (its file in bench/results).
  const name = process.env.BENCH_RENDER_ONLY
  const file = name.endsWith('.json') ? path.join(results, path.basename(name)) : undefined
  Object.assign(report, file ? JSON.parse(fs.readFileSync(file, 'utf8')) : savedRuns().at(-1))
  server.close()
} else {
  const phases = {}
  const phase = async (name, run) => {
    const t0 = Date.now()
    const result = await run()
    phases[name] = (Date.now() - t0) / 1000
    return result
  }
  try {
    if (only.includes('inproc')) report.inproc = await phase('in process', async () => withTargets(await inProcess({ server, dir: path.join(dir, mk('inproc')), rounds: env('BENCH_INPROC_ROUNDS', 30), log }), inProcessTargets))
    if (only.includes('w1')) {
      report.w1 = await phase('workload 1', workload1)
      report.w4 = { targets: storageTargets(report.w1) }
    }
    if (only.includes('w2')) report.w2 = await phase('workload 2', workload2)
    if (only.includes('w3')) report.w3 = await phase('workload 3', workload3)
    if (only.includes('ttfd')) report.ttfd = await phase('time to first delta', async () => withTargets(await firstDelta({ server, dir: path.join(dir, mk('ttfd')), rounds: env('BENCH_TTFD_ROUNDS', 60), log }), firstDeltaTargets))
    if (only.includes('trees')) report.trees = await phase('run trees', async () => withTargets(await runTrees({ server, dir: path.join(dir, mk('trees')), rounds: env('BENCH_TREE_ROUNDS', 15), log }), treesTargets))
    if (only.includes('pg1')) report.pg1 = await phase('workload 1 on PostgreSQL', async () => withTargets(await workloadPg1({ server, log, W1 }), pg1Targets))
    if (only.includes('control')) report.control = await phase('control latency', async () => withTargets(await controlLatency({ log }), controlLatencyTargets))
    if (only.includes('w5')) report.w5 = await phase('workload 5', async () => withTargets(await workload5({ server, log, W3 }), w5Targets))
    if (only.includes('profile')) report.profiles = await phase('profiles', profiles)
    const { unrouted } = await server.stats()
    if (unrouted) throw new Error(`the scripted server received ${unrouted} requests that named no lane`)
  } catch (error) {
    const mismatch = ModelCallMismatchError.isInstance(error)
    console.error(`\nbench failed${mismatch ? ' (a system did not make the scripted model calls; its numbers would not be comparable)' : ''}: ${mismatch ? error.message : error.stack}`)
    console.error('docs/benchmarks.md is not written.')
    server.close()
    fs.rmSync(dir, { recursive: true, force: true })
    process.exit(1)
  } finally {
    server.close()
  }
  report.loadAfter = os.loadavg()[0]
  report.wallS = (Date.now() - started) / 1000
  report.phases = phases
  fs.mkdirSync(results, { recursive: true })
  const file = path.join(results, `${report.ranAt.replace(/[:.]/g, '-')}.json`)
  fs.writeFileSync(file, JSON.stringify(report))
  log(`this run's figures: ${path.relative(root, file)}`)
}
// The runs the targets are judged on: the last BENCH_COMBINE (3) made on this run's commit.
const combined = savedRuns()
  .filter((r) => r.commit?.sha === report.commit?.sha)
  .slice(-env('BENCH_COMBINE', 3))
const markdown = [render(report), renderInProcess(report.inproc), renderFirstDelta(report.ttfd), report.trees ? renderTrees(report.trees) : '', renderPg1(report.pg1), renderControlLatency(report.control), renderW5(report.w5)].filter(Boolean).join('\n')
console.log(markdown)
const out = process.env.BENCH_OUT ?? path.join(root, 'docs/benchmarks.md')
fs.writeFileSync(out, markdown)
log(`wrote ${path.relative(process.cwd(), out)} in ${((Date.now() - started) / 1000).toFixed(0)} s`)
fs.rmSync(dir, { recursive: true, force: true })

// ---------------------------------------------------------------------------------------

/** Workload 1 (and 4): one 10-step turn on a new session, systems interleaved. */
async function workload1() {
  const systems = await createSystems({ baseURL: server.url, dir: path.join(dir, mk('w1')) })
  const script = turnScript({ steps: W1.steps, deltas: W1.deltas })
  const times = new Map(systems.map((s) => [s.id, []]))
  const deltas = new Map(systems.map((s) => [s.id, 0]))
  const before = new Map()
  const total = W1.warmup + W1.rounds
  for (let round = 0; round < total; round++) {
    if (round === W1.warmup) {
      for (const s of systems) if (s.dbPath) before.set(s.id, { db: measureDb(s.dbPath, s.sqlite), writes: { ...(writeCounts.get(s.dbPath) ?? { statements: 0, rows: 0 }) } })
    }
    for (const s of systems) {
      const lane = `w1-${s.id}`
      await server.fill(lane, script)
      const session = await s.newSession(lane)
      let count = 0
      const t0 = performance.now()
      await s.turn(session, `lane:${lane} round ${round}: fetch the ten documents`, () => count++)
      const ms = performance.now() - t0
      if (count !== W1.steps * W1.deltas) throw new Error(`${s.short}: ${count} deltas, expected ${W1.steps * W1.deltas}`)
      await expectModelCalls(server, { workload: 'workload 1', system: s.short, lane, expected: W1.steps })
      if (round >= W1.warmup) times.get(s.id).push(ms)
      deltas.set(s.id, count)
    }
    log(`w1 round ${round + 1}/${total}${round < W1.warmup ? ' (warm-up)' : ''}`)
  }
  const storage = {}
  for (const s of systems) {
    if (!s.dbPath) continue
    const after = measureDb(s.dbPath, s.sqlite)
    const writes = writeCounts.get(s.dbPath) ?? { statements: 0, rows: 0 }
    const b = before.get(s.id)
    storage[s.id] = {
      bytes: (after.bytes - b.db.bytes) / W1.rounds,
      payload: after.payload === undefined ? undefined : (after.payload - b.db.payload) / W1.rounds,
      rows: (after.totalRows - b.db.totalRows) / W1.rounds,
      tables: Object.fromEntries(Object.entries(after.rows).map(([t, n]) => [t, (n - (b.db.rows[t] ?? 0)) / W1.rounds])),
      statements: (writes.statements - b.writes.statements) / W1.rounds,
      changed: (writes.rows - b.writes.rows) / W1.rounds,
    }
  }
  for (const s of systems) await s.close()
  const result = { systems: systems.map(({ id, name, short, kind, persistent }) => ({ id, name, short, kind, persistent })), times: Object.fromEntries(times), storage, deltasPerTurn: W1.steps * W1.deltas, modelCallsPerTurn: W1.steps }
  result.targets = w1Targets(result)
  return result
}

/** Workload 2: 100 turns of 2 steps in one session per system, interleaved turn by turn. */
async function workload2() {
  const systems = await createSystems({ baseURL: server.url, dir: path.join(dir, mk('w2')) }, W2_SYSTEMS)
  const script = turnScript({ steps: 2, deltas: W2.deltas })
  const sessions = new Map()
  const times = new Map(systems.map((s) => [s.id, []]))
  const added = new Map(systems.map((s) => [s.id, []]))
  for (let turn = 0; turn < W2.turns; turn++) {
    const measureBytes = turn === 0 || turn === W2.turns - 1
    for (const s of systems) {
      const lane = `w2-${s.id}`
      await server.fill(lane, script)
      if (!sessions.has(s.id)) sessions.set(s.id, await s.newSession(lane))
      const size = measureBytes && s.dbPath ? measureDb(s.dbPath, s.sqlite) : undefined
      const t0 = performance.now()
      await s.turn(sessions.get(s.id), `${turn === 0 ? `lane:${lane} ` : ''}turn ${turn}: fetch a document`, noop)
      times.get(s.id).push(performance.now() - t0)
      await expectModelCalls(server, { workload: 'workload 2', system: s.short, lane, expected: 2 })
      if (size) {
        const after = measureDb(s.dbPath, s.sqlite)
        added.get(s.id).push({ turn, bytes: after.bytes - size.bytes, payload: after.payload - size.payload, rows: after.totalRows - size.totalRows })
      }
    }
    if ((turn + 1) % 10 === 0) log(`w2 turn ${turn + 1}/${W2.turns}`)
  }
  const finalBytes = {}
  for (const s of systems) if (s.dbPath) finalBytes[s.id] = measureDb(s.dbPath, s.sqlite).bytes
  for (const s of systems) await s.close()
  const result = { systems: systems.map(({ id, short, kind }) => ({ id, short, kind })), times: Object.fromEntries(times), added: Object.fromEntries(added), finalBytes, modelCallsPerTurn: 2 }
  result.targets = w2Targets(result)
  return result
}

/** Workload 3: per system, a fresh process runs `sessions` 3-step turns at once. */
async function workload3() {
  const results = []
  for (const id of W3_SYSTEMS) {
    const { result } = await runW3Process(id, 'w3', process.env.BENCH_W3_EXEC_ARGV?.split(' ') ?? [])
    log(`w3 ${result.short}: ${result.turnsPerSecond.toFixed(1)} turns/s, CPU ${result.cpuMsPerTurn.toFixed(1)} ms/turn, p99 ${result.p99.toFixed(1)} ms, loop p99/max ${result.loopP99.toFixed(0)}/${result.loopMax.toFixed(0)} ms, utilisation ${(100 * result.loopUtilization).toFixed(0)} %, errors ${result.errors}`)
    results.push(result)
  }
  const w3 = { systems: results, modelCallsPerTurn: W3.steps }
  w3.targets = w3Targets(w3)
  return w3
}

/**
 * One workload-3 process for system `id` on fresh lanes named `<prefix>-<id>-<i>`; checks every
 * lane's model calls afterwards. Resolves when the process has exited (and written any profile).
 */
async function runW3Process(id, prefix, execArgv) {
  const lanes = []
  const script = turnScript({ steps: W3.steps, deltas: W3.deltas, marker: true, delayMs: W3.delayMs })
  for (let i = 0; i < W3.sessions; i++) {
    const lane = `${prefix}-${id}-${i}`
    await server.fill(lane, script)
    lanes.push(lane)
  }
  const result = await runChild('w3.mjs', execArgv, { id, baseURL: server.url, dir: path.join(dir, mk(`${prefix}-${id}`)), lanes, expectDeltas: W3.steps * W3.deltas })
  for (const lane of lanes) await expectModelCalls(server, { workload: 'workload 3', system: result.short, lane, expected: W3.steps, drop: true })
  return { result, lanes }
}

/** Forks bench/<file>, sends it `task`, resolves with its one reply once it has exited. */
function runChild(file, execArgv, task) {
  const child = fork(path.join(here, file), [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  return new Promise((resolve, reject) => {
    let reply
    child.once('message', (message) => (reply = message))
    child.once('error', reject)
    child.once('exit', (code) => (reply && code === 0 ? resolve(reply) : reject(new Error(`bench/${file} (${task.id}): exited with ${code}${reply ? '' : ' before replying'}`))))
    child.send(task)
  })
}

/**
 * CPU profiles: workload 1 (PROFILE.w1Turns turns after warm-up) and workload 3 (the same load
 * as the timed run), each profiled system in its own child process under --cpu-prof, on the same
 * scripted server. Only the samples inside the turns' time window count.
 */
async function profiles() {
  const out = { intervalUs: PROFILE.intervalUs, w1: { turns: PROFILE.w1Turns, warmup: PROFILE.w1Warmup, systems: {} }, w3: { turns: W3.sessions, systems: {} } }
  const profileDir = path.join(dir, mk('profiles'))
  const cpuProf = (name) => ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}.cpuprofile`, `--cpu-prof-interval=${PROFILE.intervalUs}`]
  const summarize = (name, window, turns) => {
    const summary = summarizeProfile(JSON.parse(fs.readFileSync(path.join(profileDir, `${name}.cpuprofile`), 'utf8')), { window })
    return { ...summary, functions: summary.functions.slice(0, 40), turns }
  }
  const script = turnScript({ steps: W1.steps, deltas: W1.deltas })
  for (const id of PROFILE.systems) {
    const lanes = []
    for (let i = 0; i < PROFILE.w1Warmup + PROFILE.w1Turns; i++) {
      lanes.push(`prof-w1-${id}-${i}`)
      await server.fill(lanes[i], script)
    }
    const name = `w1-${id}`
    const result = await runChild('profile.mjs', cpuProf(name), { id, baseURL: server.url, dir: path.join(dir, mk(name)), lanes, warmup: PROFILE.w1Warmup })
    for (const lane of lanes) await expectModelCalls(server, { workload: 'workload 1 (profile)', system: result.short, lane, expected: W1.steps, drop: true })
    out.w1.systems[id] = { short: result.short, medianMs: stats(result.times).median, cpuMsPerTurn: result.cpuMs / PROFILE.w1Turns, ...summarize(name, result.window, PROFILE.w1Turns) }
    log(`profile w1 ${result.short}: ${out.w1.systems[id].cpuMsPerTurn.toFixed(0)} ms CPU per turn`)
  }
  for (const id of PROFILE.systems) {
    const { result } = await runW3Process(id, 'prof-w3', cpuProf(`w3-${id}`))
    out.w3.systems[id] = { short: result.short, cpuMsPerTurn: result.cpuMsPerTurn, p99: result.p99, errors: result.errors, ...summarize(`w3-${id}`, result.window, W3.sessions) }
    log(`profile w3 ${result.short}: ${result.cpuMsPerTurn.toFixed(1)} ms CPU per turn`)
  }
  return out
}

/** The commit the run is made on, and whether the tree differed from it (this page and the results left aside). */
function gitCommit() {
  try {
    const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    const changed = git('status', '--porcelain').split('\n').filter((line) => line && !/ (bench\/results\/|bench\/out\/|docs\/benchmarks\.md)/.test(line))
    return { sha: git('rev-parse', 'HEAD'), short: git('rev-parse', '--short', 'HEAD'), dirty: changed.length > 0 }
  } catch {
    return undefined
  }
}

/** Every run kept in bench/results, oldest first. */
function savedRuns() {
  if (!fs.existsSync(results)) return []
  return fs
    .readdirSync(results)
    // (this script's runs only: bench/results also keeps other benches' files, named by their bench)
    .filter((f) => /^\d{4}-.*\.json$/.test(f))
    .sort()
    .map((f) => JSON.parse(fs.readFileSync(path.join(results, f), 'utf8')))
}

function mk(name) {
  const d = path.join(dir, name)
  fs.mkdirSync(d, { recursive: true })
  return name
}

// Targets (issue 19 for workloads 1 and 3; issue 8's for 2 and 4). Each returns TargetResult[].

function ratio(a, b) {
  return `${(a / b).toFixed(2)}×`
}
function notMeasured(target, why) {
  return { target, measured: `not measured (${why})`, met: null }
}

function w1Targets(w1) {
  const med = (id) => (w1.times[id]?.length ? stats(w1.times[id]).median : undefined)
  const [tc, ds, lg] = [med('tc-file'), med('doStream'), med('langgraph')]
  const target = 'turnchart on a SQLite file ≤ 1.15× the hand loop over model.doStream (median ms/turn)'
  return [
    tc && ds ? { target, measured: `${ratio(tc, ds)} (${fmtMs(tc)} ms / ${fmtMs(ds)} ms)`, met: tc / ds <= 1.15, value: tc / ds, limit: { max: 1.15 }, unit: '×' } : notMeasured(target, 'turnchart file or the doStream loop missing'),
    ...(tc && lg ? [{ target: 'information: turnchart on a file against LangGraph.js + SQLite (median ms/turn)', measured: `${ratio(tc, lg)} (${fmtMs(tc)} ms / ${fmtMs(lg)} ms)`, met: null }] : []),
  ]
}

function storageTargets(w1) {
  const tc = w1.storage['tc-file']
  const lg = w1.storage.langgraph
  const target = "turnchart file bytes per turn ≤ 0.10× LangGraph's"
  if (!tc || !lg) return [notMeasured(target, 'turnchart file or LangGraph missing')]
  const r = tc.bytes / lg.bytes
  return [
    { target, measured: `${r.toFixed(3)}× (${fmtBytes(tc.bytes)} / ${fmtBytes(lg.bytes)})`, met: r <= 0.1, value: r, limit: { max: 0.1 }, unit: '×' },
    { target: 'turnchart file: no write per delta', measured: `${tc.statements.toFixed(0)} write statements for ${w1.deltasPerTurn} deltas`, met: tc.statements < w1.deltasPerTurn },
  ]
}

function w2Targets(w2) {
  const times = w2.times['tc-file']
  const tc = w2.added['tc-file']
  if (!times) return [notMeasured("turnchart file: last/first time ≤ the doStream loop's + 0.1, last/first bytes ≤ 1.5", 'turnchart file missing')]
  const lastOverFirst = (t) => stats(t.slice(-W2.window)).median / stats(t.slice(0, W2.window)).median
  const timeRatio = lastOverFirst(times)
  const bare = w2.times.doStream ? lastOverFirst(w2.times.doStream) : undefined
  const byteRatio = tc?.length === 2 ? tc[1].bytes / Math.max(1, tc[0].bytes) : NaN
  // Issue 29: both grow with the history (each request carries it), so the bound is the bare loop's own ratio + 0.1 (was 1.3).
  const runLength = `turnchart file: median of the last ${W2.window} turns over the first ${W2.window}'s ≤ the doStream loop's own ratio + 0.1`
  return [
    bare === undefined
      ? notMeasured(runLength, 'the doStream loop missing')
      : { target: runLength, measured: `${timeRatio.toFixed(2)} against ${bare.toFixed(2)} (${timeRatio - bare >= 0 ? '+' : '−'}${Math.abs(timeRatio - bare).toFixed(2)})`, met: timeRatio <= bare + 0.1, value: timeRatio - bare, limit: { max: 0.1 }, unit: '' },
    { target: 'turnchart file: bytes added by the last turn ≤ 1.5× the first turn\'s', measured: `${byteRatio.toFixed(2)} (${tc ? tc.map((x) => fmtBytes(x.bytes)).join(' → ') : '–'}; file growth is page-granular)`, met: byteRatio <= 1.5 },
  ]
}

function w3Targets(w3) {
  const tc = w3.systems.find((r) => r.id === 'tc-file')
  const ds = w3.systems.find((r) => r.id === 'doStream')
  if (!tc || !ds) return [notMeasured('turnchart file against the doStream loop: CPU ≤ 1.2×, p99 ≤ 1.5×, 0 errors', 'turnchart file or the doStream loop missing')]
  return [
    { target: "turnchart file client CPU per turn ≤ 1.2× the doStream loop's", measured: `${ratio(tc.cpuMsPerTurn, ds.cpuMsPerTurn)} (${tc.cpuMsPerTurn.toFixed(1)} ms / ${ds.cpuMsPerTurn.toFixed(1)} ms)`, met: tc.cpuMsPerTurn / ds.cpuMsPerTurn <= 1.2, value: tc.cpuMsPerTurn / ds.cpuMsPerTurn, limit: { max: 1.2 }, unit: '×' },
    { target: "turnchart file p99 delta delay ≤ 1.5× the doStream loop's p99", measured: `${ratio(tc.p99, ds.p99)} (${tc.p99.toFixed(0)} ms / ${ds.p99.toFixed(0)} ms)`, met: tc.p99 / ds.p99 <= 1.5, value: tc.p99 / ds.p99, limit: { max: 1.5 }, unit: '×' },
    { target: 'turnchart file: 0 errors', measured: `${tc.errors} errors in ${tc.turns} turns`, met: tc.errors === 0 },
  ]
}

// ---------------------------------------------------------------------------------------

function versions() {
  const req = createRequire(path.join(here, 'package.json'))
  const v = (name, from = req) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(path.dirname(from.resolve(`${name}/package.json`)), 'package.json'), 'utf8')).version
    } catch {
      // packages whose exports hide package.json: find it next to the entry point
      let d = path.dirname(from.resolve(name))
      while (!fs.existsSync(path.join(d, 'package.json')) || JSON.parse(fs.readFileSync(path.join(d, 'package.json'), 'utf8')).name !== name) d = path.dirname(d)
      return JSON.parse(fs.readFileSync(path.join(d, 'package.json'), 'utf8')).version
    }
  }
  const rootReq = createRequire(path.join(root, 'package.json'))
  return [
    ['turnchart', JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version + ' (this repository, dist/)'],
    ['ai (bench / turnchart)', `${v('ai')} / ${v('ai', rootReq)}`],
    ['@ai-sdk/openai-compatible', v('@ai-sdk/openai-compatible')],
    ['xstate', v('xstate', rootReq)],
    ['kysely', v('kysely', rootReq)],
    ['better-sqlite3 (bench / turnchart)', `${v('better-sqlite3')} / ${v('better-sqlite3', rootReq)}`],
    ['@langchain/langgraph', v('@langchain/langgraph')],
    ['@langchain/langgraph-checkpoint-sqlite', v('@langchain/langgraph-checkpoint-sqlite')],
    ['@langchain/openai', v('@langchain/openai')],
    ['@langchain/core', v('@langchain/core')],
  ]
}

/** A target over several runs: the median of its values against its bound; without values, met when met in every run. */
function judge(each) {
  const found = each.filter(Boolean)
  if (found.length === 0 || found.some((t) => t.met === null)) return { met: null }
  const values = found.map((t) => t.value)
  if (found[0].limit && values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    const median = stats(values).median
    const { max, below } = found[0].limit
    const met = (max === undefined || median <= max) && (below === undefined || median < below) && found.length === each.length
    const unit = found[0].unit ?? ''
    const shown = unit === '%' ? `${(100 * median).toFixed(0)} %` : unit === 'ms' ? `${fmtMs(median)} ms` : `${median.toFixed(2)}${unit}`
    return { met, median: shown }
  }
  return { met: found.length === each.length && found.every((t) => t.met === true), median: undefined }
}

function verdict(met) {
  return met === true ? 'met' : met === false ? '**missed**' : '–'
}

/** A workload section's own targets, as the summary table shows them. */
function renderTargets(p, targets = []) {
  for (const t of targets) p(`${t.met === null ? '' : 'Target: '}${t.target}. Measured: **${t.measured}**${t.met === null ? '' : ` — ${verdict(t.met)}`}.`)
  p()
}

function render({ w1, w2, w3, profiles: prof }) {
  const lines = []
  const p = (s = '') => lines.push(s)
  // The machine of the run (saved with it: a page rendered again later describes the run's machine, not today's).
  const machine = report.machine ?? machineNow()
  p('# Benchmarks')
  p()
  p('<!-- generated by `npm run bench` (bench/run.mjs); do not edit by hand -->')
  p()
  p(`Run ${report.ranAt} on ${machine.cpus} × ${machine.cpu}, ${machine.memoryGb.toFixed(1)} GB memory, ` + `Node ${machine.node}, ${machine.os}. ` + `1-minute load average ${report.loadBefore?.toFixed(1)} at the start, ${report.loadAfter?.toFixed(1)} at the end` + (Math.max(report.loadBefore ?? 0, report.loadAfter ?? 0) > machine.cpus ? ` (above ${machine.cpus}: other processes competed for the CPU, so absolute times are inflated; the ratios compare systems measured interleaved in the same run).` : '.'))
  if (report.wallS) p(`\nThe run (bench/run.mjs, after the build) took ${(report.wallS / 60).toFixed(1)} minutes: ${Object.entries(report.phases ?? {}).map(([name, sec]) => `${name} ${sec.toFixed(0)} s`).join(', ')}.${REDUCED.length ? ` To stay under 10 minutes on this machine the sizes are smaller than in earlier runs: ${REDUCED.join('; ')}.` : ''}`)
  p()
  p('All systems talk over HTTP on 127.0.0.1 to the same scripted OpenAI-compatible server (`turnchart/testing`), ' + 'running in one separate process for the whole run, with the same scripted replies; tools return 1 KB at once. ' + 'Systems run interleaved (A, B, C, … A, B, C, …). Times are medians after warm-up, with min and max. ' + 'After every turn the bench checks, on the server, that the turn made exactly one model call per scripted step and left no reply unused; a system that does not fails the run (no page is written). ' + '"× fastest peer" divides by the fastest of the AI SDK loops and LangGraph in the same run; ' + '"× LangGraph" by LangGraph + SQLite, the fastest (and only) peer that persists. ' + 'The reference "hand loop over model.doStream" is the bare path: the same provider and HTTP, no `streamText`, nothing stored.')
  p()
  p('Reproduce: `npm run bench` at the root (installs `bench/` dependencies with `npm --prefix bench ci` if missing, builds turnchart, runs everything). Code: `bench/` (server.mjs: the scripted server process; systems.mjs: the systems; run.mjs: workloads, targets and this page; w3.mjs: workload 3 per process; first-delta.mjs: the time to first delta; pg.mjs, pg-systems.mjs, w5.mjs: the PostgreSQL workloads and the scale-out model; control-latency.mjs: control across engines; profile.mjs / profile-summary.mjs: CPU profiles). Every run\'s figures are kept in `bench/results/`.')
  p()
  // Summary: every workload's targets, including bench/pg.mjs's (report.pg1 / report.w5), judged on the runs combined.
  p('## Targets')
  p()
  const runs = combined.length ? combined : [report]
  const several = runs.length > 1
  const when = (r) => `${r.ranAt.slice(5, 16).replace('T', ' ')}`
  if (several) {
    p(`Judged on the median of ${runs.length} runs of \`npm run bench\` on commit ${report.commit?.short ?? '?'}${runs.some((r) => r.commit?.dirty) ? ' (with changes not committed)' : ''}: each run's figure is shown, the verdict is the median's (a target without a single number is met when it is met in every run). The sections below show the last run's tables.`)
    p()
    p(`| workload | target | ${runs.map((r, i) => `run ${i + 1} (${when(r)} UTC)`).join(' | ')} | median | result |`)
    p(`|---|---|${runs.map(() => '---').join('|')}|---|---|`)
  } else {
    p(`One run (${report.ranAt.slice(0, 16).replace('T', ' ')} UTC, commit ${report.commit?.short ?? '?'}${report.commit?.dirty ? ' with changes not committed' : ''}); three runs on one commit are judged on their median.`)
    p()
    p('| workload | target | measured | result |')
    p('|---|---|---|---|')
  }
  const missed = []
  for (const [key, title] of SUMMARY) {
    const targets = report[key]?.targets
    if (!targets) {
      p(several ? `| ${title} | – | ${runs.map(() => 'not run').join(' | ')} | – | – |` : `| ${title} | – | not run | – |`)
      continue
    }
    for (const t of targets) {
      const each = runs.map((r) => r[key]?.targets?.find((x) => x.target === t.target))
      const judged = several ? judge(each) : { met: t.met, median: undefined }
      if (several) p(`| ${title} | ${t.target} | ${each.map((x) => x?.measured ?? 'not run').join(' | ')} | ${judged.median ?? '–'} | ${judged.met === null ? 'information' : verdict(judged.met)} |`)
      else p(`| ${title} | ${t.target} | ${t.measured} | ${t.met === null ? 'information' : verdict(t.met)} |`)
      if (judged.met === false && !missed.includes(title)) missed.push(title)
    }
  }
  p()
  if (w1) {
    const med = Object.fromEntries(Object.entries(w1.times).map(([id, t]) => [id, stats(t)]))
    const peers = w1.systems.filter((s) => s.kind === 'peer')
    const fastest = Math.min(...peers.map((s) => med[s.id].median))
    const fastestPersisted = Math.min(...peers.filter((s) => s.persistent).map((s) => med[s.id].median))
    const bare = med.doStream?.median
    p(`## Workload 1: tool loop`)
    p()
    p(`One turn of ${W1.steps} steps (${w1.modelCallsPerTurn ?? W1.steps} model calls) on a new session; each step streams ${W1.deltas} text deltas, then calls one tool (1 KB result); the last step ends without a tool call. ${W1.warmup} warm-up rounds, ${W1.rounds} measured.`)
    p()
    p('| system | median ms/turn | min | max | × doStream loop | × fastest peer | × LangGraph+SQLite |')
    p('|---|---:|---:|---:|---:|---:|---:|')
    for (const s of w1.systems) {
      const m = med[s.id]
      p(`| ${s.name} | ${fmtMs(m.median)} | ${fmtMs(m.min)} | ${fmtMs(m.max)} | ${bare ? (m.median / bare).toFixed(2) : '–'} | ${(m.median / fastest).toFixed(2)} | ${(m.median / fastestPersisted).toFixed(2)} |`)
    }
    p()
    renderTargets(p, w1.targets)
    p(`## Workload 4: storage per turn (workload 1's turn)`)
    p()
    p(`Averaged over the ${W1.rounds} measured turns of workload 1; file sizes after \`PRAGMA wal_checkpoint(TRUNCATE)\`. Write statements are INSERT/UPDATE/DELETE executed through better-sqlite3 (counted by wrapping its Statement); a turn streams ${w1.deltasPerTurn} deltas.`)
    p()
    p('| system | file bytes / turn | payload bytes / turn (dbstat) | rows added / turn | write statements / turn | rows written / turn |')
    p('|---|---:|---:|---:|---:|---:|')
    for (const s of w1.systems) {
      const st = w1.storage[s.id]
      if (!st) continue
      p(`| ${s.name} | ${fmtBytes(st.bytes)} | ${st.payload === undefined ? 'n/a' : fmtBytes(st.payload)} | ${st.rows.toFixed(1)} (${Object.entries(st.tables).filter(([, n]) => n).map(([t, n]) => `${t} ${n.toFixed(0)}`).join(', ')}) | ${st.statements.toFixed(1)} | ${st.changed.toFixed(1)} |`)
    }
    p()
    renderTargets(p, report.w4?.targets)
  }
  if (w2) {
    p(`## Workload 2: long session`)
    p()
    p(`${W2.turns} turns of 2 steps (${W2.deltas} deltas each; the first calls the tool) in one session per system, interleaved turn by turn. "last/first" is the median of the last ${W2.window} turns over the median of the first ${W2.window}. Bytes: database file growth of the first and the last turn after a WAL checkpoint.`)
    p()
    p('| system | first 10 median ms | last 10 median ms | last/first | × fastest peer (last 10) | first turn bytes | last turn bytes | last/first bytes | file after all turns |')
    p('|---|---:|---:|---:|---:|---:|---:|---:|---:|')
    const first = (id) => stats(w2.times[id].slice(0, W2.window)).median
    const last = (id) => stats(w2.times[id].slice(-W2.window)).median
    const fastestLast = Math.min(...w2.systems.filter((s) => s.kind === 'peer').map((s) => last(s.id)))
    for (const s of w2.systems) {
      const a = w2.added[s.id]
      const bytes = a.length === 2 ? [a[0].bytes, a[1].bytes] : undefined
      p(`| ${s.short} | ${fmtMs(first(s.id))} | ${fmtMs(last(s.id))} | ${(last(s.id) / first(s.id)).toFixed(2)} | ${(last(s.id) / fastestLast).toFixed(2)} | ${bytes ? fmtBytes(bytes[0]) : '–'} | ${bytes ? fmtBytes(bytes[1]) : '–'} | ${bytes ? (bytes[1] / Math.max(1, bytes[0])).toFixed(2) : '–'} | ${w2.finalBytes[s.id] ? fmtBytes(w2.finalBytes[s.id]) : '–'} |`)
    }
    const tc = w2.added['tc-file']
    p()
    renderTargets(p, w2.targets)
    p(`The dbstat payload bytes of the first and last turn: ${tc ? tc.map((x) => fmtBytes(x.payload)).join(' → ') : '–'} (turnchart), ${w2.added.langgraph?.map((x) => fmtBytes(x.payload)).join(' → ') ?? '–'} (LangGraph).`)
    p()
  }
  if (w3) {
    const rows = w3.systems
    p(`## Workload 3: many sessions`)
    p()
    p(`${W3.sessions} sessions each start a ${W3.steps}-step turn (${w3.modelCallsPerTurn ?? W3.steps} model calls) at the same moment (${W3.deltas} deltas per step, the server paces chunks ${W3.delayMs} ms apart like a model streaming ~${Math.round(1000 / W3.delayMs)} tokens/s). Each system runs in a fresh process. Delta delay: from the server writing the SSE chunk (a CLOCK_MONOTONIC timestamp carried in the text) to the subscriber callback. Client CPU: user+system time of the client process during the turns. Event loop: \`monitorEventLoopDelay\` (10 ms resolution) and \`performance.eventLoopUtilization()\` (the share of the wall time the loop was running code rather than waiting for I/O) over the turns.`)
    p()
    p('| system | turns/s | wall s | client CPU ms / turn | × doStream loop (CPU) | × fastest peer (CPU) | p50 delay ms | p99 delay ms | × doStream loop (p99) | max delay ms | event-loop delay p50 / p99 / max ms | event-loop utilisation | peak RSS MB | RSS before turns MB | errors |')
    p('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    const fastestCpu = Math.min(...rows.filter((r) => r.kind === 'peer' && !r.errors).map((r) => r.cpuMsPerTurn)) // Infinity without peers
    const ds = rows.find((r) => r.id === 'doStream')
    for (const r of rows) {
      p(`| ${r.short} | ${r.turnsPerSecond.toFixed(1)} | ${r.wallS.toFixed(2)} | ${r.cpuMsPerTurn.toFixed(1)} | ${ds ? (r.cpuMsPerTurn / ds.cpuMsPerTurn).toFixed(2) : '–'} | ${Number.isFinite(fastestCpu) ? (r.cpuMsPerTurn / fastestCpu).toFixed(2) : '–'} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${ds ? (r.p99 / ds.p99).toFixed(2) : '–'} | ${r.maxDelay.toFixed(1)} | ${r.loopP50?.toFixed(0) ?? '–'} / ${r.loopP99.toFixed(0)} / ${r.loopMax.toFixed(0)} | ${r.loopUtilization === undefined ? '–' : `${(100 * r.loopUtilization).toFixed(0)} %`} | ${r.peakRssMb.toFixed(0)} | ${r.baseRssMb.toFixed(0)} | ${r.errors}${r.firstError ? ` (${r.firstError.slice(0, 80)})` : ''} |`)
    }
    p()
    renderTargets(p, w3.targets)
  }
  // PostgreSQL workloads (bench/pg.mjs) render their sections here, from report.pg1 / report.w5.
  if (prof) renderProfiles(p, prof)
  const notes = path.join(here, 'NOTES.md')
  if (fs.existsSync(notes)) {
    p(fs.readFileSync(notes, 'utf8').trim())
    p()
  }
  p('## Versions')
  p()
  p('| package | version |')
  p('|---|---|')
  for (const [name, version] of versions()) p(`| ${name} | ${version} |`)
  p()
  if (missed.length) {
    p(`Targets missed in this run: ${missed.join('; ')}. Where the time goes: the profile tables above (generated) and the notes (by hand).`)
    p()
  }
  return lines.join('\n')
}

/**
 * The generated profile tables: per system, the process's CPU per turn (user+system during the
 * turns) apportioned to categories by their share of the main thread's busy samples.
 */
function renderProfiles(p, prof) {
  p('## Where the time goes: CPU profiles (generated)')
  p()
  p(`Each profiled system runs again in its own child process under \`node --cpu-prof\` (sampling every ${prof.intervalUs} µs), after the timed runs, against the same scripted server; only the samples taken during the turns count (not start-up, not warm-up). Categories are self time by where the code lives: turnchart's own code by folder of \`src/\`, then the libraries and Node's internals. A native call without a frame of its own is booked to its caller (a socket's \`writev\` to undici / net, \`structuredClone\` to the turnchart folder that calls it); "better-sqlite3" includes the SQLite statement calls, which V8 books to Kysely's \`SqliteDriver.executeQuery\`. "share" is the share of the main thread's busy (non-idle) samples; "ms/turn" is the profiled process's CPU per turn (user + system, all threads) times that share, so a loaded machine, which stretches the samples' wall time, does not inflate it. The profiler itself costs CPU: compare the shares and the difference between the systems, not the ms with the timed tables.`)
  p()
  const table = (title, w, about) => {
    const ids = Object.keys(w.systems)
    const summaries = ids.map((id) => w.systems[id])
    const cpuMs = (s, us) => (us / s.busyUs) * s.cpuMsPerTurn
    const ms = (v) => (Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2))
    const tc = w.systems['tc-file']
    const ds = w.systems.doStream
    const both = tc && ds
    p(`### ${title}`)
    p()
    p(`${about} Main-thread samples per turn (wall time): ${summaries.map((s) => `${s.short} ${ms(s.busyUs / 1000 / s.turns)} ms`).join(', ')}.`)
    p()
    p(`| where (self time) | ${summaries.map((s) => `${s.short} ms/turn | share`).join(' | ')}${both ? ' | difference ms/turn' : ''} |`)
    p(`|---|${summaries.map(() => '---:|---:').join('|')}${both ? '|---:' : ''}|`)
    const row = (label, get, bold = false) => {
      const cells = summaries.map((s) => (get(s) ? `${ms(cpuMs(s, get(s)))} | ${((100 * get(s)) / s.busyUs).toFixed(1)} %` : '– | –'))
      const b = bold ? '**' : ''
      p(`| ${b}${label}${b} | ${cells.join(' | ')}${both ? ` | ${ms(cpuMs(tc, get(tc)) - cpuMs(ds, get(ds)))}` : ''} |`)
    }
    const cats = orderedCategories(...summaries)
    const own = cats.filter(isTurnchart)
    const ownUs = (s) => own.reduce((sum, c) => sum + (s.categories[c] ?? 0), 0)
    for (const c of cats) row(c, (s) => s.categories[c] ?? 0)
    row("turnchart's own code (all src folders)", ownUs, true)
    row('all (the process CPU per turn)', (s) => s.busyUs, true)
    p()
    if (both) {
      const diff = (get) => cpuMs(tc, get(tc)) - cpuMs(ds, get(ds))
      const parts = [
        ['Kysely + better-sqlite3', (s) => (s.categories.kysely ?? 0) + (s.categories['better-sqlite3'] ?? 0)],
        ["turnchart's own code", ownUs],
        ['XState', (s) => s.categories.xstate ?? 0],
        ...cats.filter((c) => !isTurnchart(c) && !['kysely', 'better-sqlite3', 'xstate'].includes(c)).map((c) => [c, (s) => s.categories[c] ?? 0]),
      ]
        .map(([label, get]) => [label, diff(get)])
        .sort((a, b) => b[1] - a[1])
      const total = tc.cpuMsPerTurn - ds.cpuMsPerTurn
      const small = Math.max(0.02 * Math.abs(total), 0.1) // differences below 2 % of the total are not listed
      const more = parts.filter(([, d]) => d >= small)
      const less = parts.filter(([, d]) => d <= -small).reverse()
      p(`Where ${tc.short}'s extra ${ms(total)} ms of CPU per turn over the ${ds.short} go (largest first): ${more.map(([label, d]) => `${label} +${ms(d)}`).join(', ') || '–'}${less.length ? `; less than the ${ds.short}: ${less.map(([label, d]) => `${label} ${ms(d)}`).join(', ')}` : ''}.`)
      p()
    }
    if (tc) {
      p(`Top functions by self time, ${tc.short}:`)
      p()
      p('| function (file:line of the built code) | where | ms/turn | share |')
      p('|---|---|---:|---:|')
      for (const f of tc.functions.slice(0, 15)) {
        // the file name only: the built code's paths (dist/, node_modules/) are not the repository's
        p(`| \`${f.name}\`${f.where === '(native)' ? ' (native)' : ` (${path.basename(f.where)})`} | ${f.category} | ${ms(cpuMs(tc, f.us))} | ${((100 * f.us) / tc.busyUs).toFixed(1)} % |`)
      }
      p()
    }
  }
  if (prof.w1) table('Workload 1 (one 10-step turn, 4,000 deltas)', prof.w1, `${prof.w1.turns} turns per system after ${prof.w1.warmup} warm-up, one at a time. Under the profiler: ${Object.values(prof.w1.systems).map((s) => `${s.short} median ${fmtMs(s.medianMs)} ms per turn, ${s.cpuMsPerTurn.toFixed(0)} ms CPU per turn`).join('; ')}.`)
  if (prof.w3) table(`Workload 3 (${prof.w3.turns} sessions at once, per turn)`, prof.w3, `${prof.w3.turns} turns at once, as in the timed run. Under the profiler: ${Object.values(prof.w3.systems).map((s) => `${s.short} ${s.cpuMsPerTurn.toFixed(1)} ms CPU per turn, p99 delay ${s.p99.toFixed(0)} ms`).join('; ')}.`)
}

/** This machine as the page describes it. */
function machineNow() {
  const cpu = os.cpus()
  return { cpus: cpu.length, cpu: cpu[0]?.model ?? 'unknown CPU', memoryGb: os.totalmem() / 1024 ** 3, node: process.version, os: `${os.platform()} ${os.release()}` }
}
