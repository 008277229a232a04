// npm run bench (root): all workloads, all systems; prints one report and writes docs/benchmarks.md.
// Environment knobs (for quick runs): BENCH_W1_ROUNDS, BENCH_W2_TURNS, BENCH_W3_SESSIONS,
// BENCH_ONLY=w1,w2,w3,pg1,w5 (subset of workloads; pg1, w5: bench/pg.mjs), BENCH_SYSTEMS (workload 3 only), BENCH_OUT (report path;
// default docs/benchmarks.md), BENCH_RENDER_ONLY=1 (re-render bench/out/report.json), BENCH_W3_EXEC_ARGV.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fork } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { createSystems, SYSTEM_NAMES } from './systems.mjs'
import { startServer, turnScript, stats, measureDb, instrumentWrites, writeCounts, fmtMs, fmtBytes } from './lib.mjs'
import { workloadPg1, workload5, renderPg1, renderW5 } from './pg.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '..')
const env = (name, fallback) => Number(process.env[name] ?? fallback)
const only = (process.env.BENCH_ONLY ?? 'w1,w2,w3,pg1,w5').split(',')

const W1 = { steps: 10, deltas: 400, warmup: 3, rounds: env('BENCH_W1_ROUNDS', 25) }
const W2 = { turns: env('BENCH_W2_TURNS', 100), deltas: 100, window: 10 }
const W3 = { sessions: env('BENCH_W3_SESSIONS', 200), steps: 3, deltas: 100, delayMs: 20 }

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
const report = { w1: null, w2: null, w3: null, w4: null }

report.ranAt = new Date().toISOString()
report.loadBefore = os.loadavg()[0]
const saved = path.join(here, 'out/report.json')
if (process.env.BENCH_RENDER_ONLY) {
  Object.assign(report, JSON.parse(fs.readFileSync(saved, 'utf8'))) // re-render the last run (e.g. after editing NOTES.md)
  server.close()
} else {
  try {
    if (only.includes('w1')) report.w1 = await workload1()
    if (only.includes('w2')) report.w2 = await workload2()
    if (only.includes('w3')) report.w3 = await workload3()
    if (only.includes('pg1')) report.pg1 = await workloadPg1({ server, log, W1 })
    if (only.includes('w5')) report.w5 = await workload5({ server, log, W3 })
  } finally {
    server.close()
  }
  report.loadAfter = os.loadavg()[0]
  fs.mkdirSync(path.dirname(saved), { recursive: true })
  fs.writeFileSync(saved, JSON.stringify(report))
}
const markdown = [render(report), renderPg1(report.pg1), renderW5(report.w5)].filter(Boolean).join('\n')
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
  return { systems: systems.map(({ id, name, short, kind, persistent }) => ({ id, name, short, kind, persistent })), times: Object.fromEntries(times), storage, deltasPerTurn: W1.steps * W1.deltas }
}

/** Workload 2: 100 turns of 2 steps in one session per system, interleaved turn by turn. */
async function workload2() {
  const systems = await createSystems({ baseURL: server.url, dir: path.join(dir, mk('w2')) })
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
  return { systems: systems.map(({ id, short, kind }) => ({ id, short, kind })), times: Object.fromEntries(times), added: Object.fromEntries(added), finalBytes }
}

/** Workload 3: per system, a fresh process runs `sessions` 3-step turns at once. */
async function workload3() {
  const results = []
  for (const id of (process.env.BENCH_SYSTEMS?.split(',') ?? SYSTEM_NAMES)) {
    const lanes = []
    const script = turnScript({ steps: W3.steps, deltas: W3.deltas, marker: true, delayMs: W3.delayMs })
    for (let i = 0; i < W3.sessions; i++) {
      const lane = `w3-${id}-${i}`
      await server.fill(lane, script)
      lanes.push(lane)
    }
    const child = fork(path.join(here, 'w3.mjs'), [], { execArgv: process.env.BENCH_W3_EXEC_ARGV?.split(' ') ?? [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    const result = await new Promise((resolve, reject) => {
      child.once('message', resolve)
      child.once('exit', (code) => reject(new Error(`w3 ${id}: child exited with ${code}`)))
      child.send({ id, baseURL: server.url, dir: path.join(dir, mk(`w3-${id}`)), lanes, expectDeltas: W3.steps * W3.deltas })
    })
    child.removeAllListeners('exit')
    child.disconnect()
    for (const lane of lanes) await server.drop(lane)
    log(`w3 ${result.short}: ${result.turnsPerSecond.toFixed(1)} turns/s, p99 ${result.p99.toFixed(1)} ms, loop p99/max ${result.loopP99.toFixed(0)}/${result.loopMax.toFixed(0)} ms, errors ${result.errors}`)
    results.push(result)
  }
  return results
}

function mk(name) {
  const d = path.join(dir, name)
  fs.mkdirSync(d, { recursive: true })
  return name
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

function render({ w1, w2, w3 }) {
  const lines = []
  const p = (s = '') => lines.push(s)
  const cpu = os.cpus()
  p('# Benchmarks')
  p()
  p('<!-- generated by `npm run bench` (bench/run.mjs); do not edit by hand -->')
  p()
  p(`Run ${report.ranAt} on ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GB memory, ` + `Node ${process.version}, ${os.platform()} ${os.release()}. ` + `1-minute load average ${report.loadBefore?.toFixed(1)} at the start, ${report.loadAfter?.toFixed(1)} at the end` + (Math.max(report.loadBefore ?? 0, report.loadAfter ?? 0) > cpu.length ? ` (above ${cpu.length}: other processes competed for the CPU, so absolute times are inflated; the ratios compare systems measured interleaved in the same run).` : '.'))
  p()
  p('All systems talk over HTTP on 127.0.0.1 to the same scripted OpenAI-compatible server (`turnchart/testing`), ' + 'running in a separate process, with the same scripted replies; tools return 1 KB at once. ' + 'Systems run interleaved (A, B, C, … A, B, C, …). Times are medians after warm-up, with min and max. ' + '"× fastest peer" divides by the fastest of the AI SDK loops and LangGraph in the same run; ' + '"× LangGraph" by LangGraph + SQLite, the fastest (and only) peer that persists.')
  p()
  p('Reproduce: `npm run bench` at the root (installs `bench/` dependencies with `npm --prefix bench ci` if missing, builds turnchart, runs everything in a few minutes). Code: `bench/` (server.mjs: the scripted server process; systems.mjs: the systems; run.mjs: workloads and this page; w3.mjs: workload 3 per process; profile.mjs / profile-summary.mjs: CPU profiles).')
  p()
  const turnchartNote = []
  if (w1) {
    const med = Object.fromEntries(Object.entries(w1.times).map(([id, t]) => [id, stats(t)]))
    const peers = w1.systems.filter((s) => s.kind === 'peer')
    const fastest = Math.min(...peers.map((s) => med[s.id].median))
    const fastestPersisted = Math.min(...peers.filter((s) => s.persistent).map((s) => med[s.id].median))
    p(`## Workload 1: tool loop`)
    p()
    p(`One turn of ${W1.steps} steps on a new session; each step streams ${W1.deltas} text deltas, then calls one tool (1 KB result); the last step ends without a tool call. ${W1.warmup} warm-up rounds, ${W1.rounds} measured.`)
    p()
    p('| system | median ms/turn | min | max | × fastest peer | × LangGraph+SQLite |')
    p('|---|---:|---:|---:|---:|---:|')
    for (const s of w1.systems) {
      const m = med[s.id]
      p(`| ${s.name} | ${fmtMs(m.median)} | ${fmtMs(m.min)} | ${fmtMs(m.max)} | ${(m.median / fastest).toFixed(2)} | ${(m.median / fastestPersisted).toFixed(2)} |`)
    }
    const tcFile = med['tc-file'].median / fastestPersisted
    p()
    p(`Target: turnchart on a file ≤ 0.90× the fastest peer with persistence. Measured: **${tcFile.toFixed(2)}×** — ${tcFile <= 0.9 ? 'met' : '**missed**'}.`)
    p()
    report.tcFileRatio = tcFile
    if (tcFile > 0.9) turnchartNote.push('workload 1')
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
    if (w1.storage['tc-file'] && w1.storage.langgraph) {
      const r = w1.storage['tc-file'].bytes / w1.storage.langgraph.bytes
      const perDelta = w1.storage['tc-file'].statements >= w1.deltasPerTurn
      p()
      p(`Target: ≤ 0.10× LangGraph's bytes per turn, no write per delta. Measured: **${r.toFixed(3)}×** LangGraph's bytes; ${w1.storage['tc-file'].statements.toFixed(0)} write statements for ${w1.deltasPerTurn} deltas — ${r <= 0.1 && !perDelta ? 'met' : '**missed**'}.`)
      if (r > 0.1 || perDelta) turnchartNote.push('workload 4')
    }
    p()
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
    const timeRatio = last('tc-file') / first('tc-file')
    const byteRatio = tc?.length === 2 ? tc[1].bytes / Math.max(1, tc[0].bytes) : NaN
    p()
    p(`Targets: turnchart last/first time ≤ 1.3, measured **${timeRatio.toFixed(2)}** (${timeRatio <= 1.3 ? 'met' : '**missed**'}); bytes of the last turn ≤ 1.5× the first, measured **${byteRatio.toFixed(2)}** (${byteRatio <= 1.5 ? 'met' : '**missed**'}). File growth is page-granular (4 KB pages); the dbstat payload bytes of the first and last turn: ${tc ? tc.map((x) => fmtBytes(x.payload)).join(' → ') : '–'} (turnchart), ${w2.added.langgraph?.map((x) => fmtBytes(x.payload)).join(' → ') ?? '–'} (LangGraph).`)
    if (timeRatio > 1.3 || byteRatio > 1.5) turnchartNote.push('workload 2')
    p()
  }
  if (w3) {
    p(`## Workload 3: many sessions`)
    p()
    p(`${W3.sessions} sessions each start a ${W3.steps}-step turn at the same moment (${W3.deltas} deltas per step, the server paces chunks ${W3.delayMs} ms apart like a model streaming ~${Math.round(1000 / W3.delayMs)} tokens/s). Each system runs in a fresh process. Delta delay: from the server writing the SSE chunk (a CLOCK_MONOTONIC timestamp carried in the text) to the subscriber callback. Client CPU: user+system time of the client process during the turns.`)
    p()
    p('| system | turns/s | wall s | client CPU ms / turn | × fastest peer (CPU) | p50 delay ms | p99 delay ms | max delay ms | event-loop delay p99 / max ms | peak RSS MB | RSS before turns MB | errors |')
    p('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
    const fastestCpu = Math.min(...w3.filter((r) => r.kind === 'peer' && !r.errors).map((r) => r.cpuMsPerTurn))
    for (const r of w3) {
      p(`| ${r.short} | ${r.turnsPerSecond.toFixed(1)} | ${r.wallS.toFixed(2)} | ${r.cpuMsPerTurn.toFixed(1)} | ${(r.cpuMsPerTurn / fastestCpu).toFixed(2)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.maxDelay.toFixed(1)} | ${r.loopP99.toFixed(0)} / ${r.loopMax.toFixed(0)} | ${r.peakRssMb.toFixed(0)} | ${r.baseRssMb.toFixed(0)} | ${r.errors}${r.firstError ? ` (${r.firstError.slice(0, 80)})` : ''} |`)
    }
    const tc = w3.find((r) => r.id === 'tc-file')
    if (tc) {
      p()
      p(`Target: turnchart p99 delta delay < 50 ms with no errors. Measured (file): **${tc.p99.toFixed(1)} ms**, ${tc.errors} errors, peak RSS ${tc.peakRssMb.toFixed(0)} MB — ${tc.p99 < 50 && !tc.errors ? 'met' : '**missed**'}.`)
      if (tc.p99 >= 50 || tc.errors) turnchartNote.push('workload 3')
    }
    p()
  }
  p('## Versions')
  p()
  p('| package | version |')
  p('|---|---|')
  for (const [name, version] of versions()) p(`| ${name} | ${version} |`)
  p()
  const notes = path.join(here, 'NOTES.md')
  if (fs.existsSync(notes)) {
    p(fs.readFileSync(notes, 'utf8').trim())
    p()
  }
  if (turnchartNote.length) {
    p(`Targets missed in this run: ${turnchartNote.join(', ')}; see "Where the time goes" above.`)
    p()
  }
  return lines.join('\n')
}
