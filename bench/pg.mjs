// The PostgreSQL workloads of the bench (issue 19, targets 3 and 4), called by run.mjs:
//   workloadPg1(ctx) / renderPg1(result): workload 1's turn, turnchart on PostgreSQL against
//     LangGraph.js with its PostgreSQL checkpointer, each in a fresh database, interleaved.
//   workload5(ctx) / renderW5(result): workload 3's load on PostgreSQL with one turnchart engine
//     process, then the same sessions split over two processes (w5.mjs) on one database.
// ctx: { server (lib.mjs startServer), log, W1: { steps, deltas, warmup, rounds }, W3: { sessions, steps, deltas, delayMs } }.
// Both return { skipped } when PostgreSQL does not answer; the page then says so.
// Knobs: BENCH_PG_URL (else TURNCHART_PG_URL, else postgres://postgres@127.0.0.1:5432/test; the user
// must be allowed to create databases), BENCH_PG1_ROUNDS, BENCH_W5_SESSIONS, BENCH_W5_DELAY_MS,
// BENCH_W5_MAX_SESSIONS, BENCH_W5_REPEATS, BENCH_W5_POOL_MAX, BENCH_W5_EXEC_ARGV.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { turnScript, stats, fmtMs, fmtBytes } from './lib.mjs'

// pg-systems.mjs and the packages it needs (pg, the LangGraph checkpointer), loaded when a workload
// runs: a bench/node_modules installed before they were added skips these workloads, not the bench.
let pg, ADMIN_URL, redact, unreachable, freshDatabase, dropDatabase, measurePg, instrumentPg, snapshotQueries, turnchartPg, langGraphPg, procCpuSeconds
async function loadPgSystems() {
  try {
    await import('@langchain/langgraph-checkpoint-postgres')
    ;({ pg, ADMIN_URL, redact, unreachable, freshDatabase, dropDatabase, measurePg, instrumentPg, snapshotQueries, turnchartPg, langGraphPg, procCpuSeconds } = await import('./pg-systems.mjs'))
    return null
  } catch (error) {
    return `the bench's PostgreSQL packages did not load (${String(error?.message ?? error).split('\n')[0]}); run \`npm --prefix bench ci\``
  }
}

const here = path.dirname(fileURLToPath(import.meta.url))
const envNumber = (name, fallback) => (process.env[name] ? Number(process.env[name]) : fallback)

// ---------------------------------------------------------------------------------------
// Workload 1 on PostgreSQL (target 3)

const PG1_DATABASES = { 'tc-pg': 'bench_tc_pg', 'lg-pg': 'bench_lg_pg' }

export async function workloadPg1({ server, log = () => {}, W1 = {} }) {
  const missing = await loadPgSystems()
  if (missing) return { skipped: missing }
  const down = await unreachable()
  if (down) return { skipped: `PostgreSQL at ${redact(ADMIN_URL)} did not answer (${down})` }
  const steps = W1.steps ?? 10
  const deltas = W1.deltas ?? 400
  const warmup = W1.warmup ?? 3
  const rounds = envNumber('BENCH_PG1_ROUNDS', Math.min(W1.rounds ?? 15, 15)) // 15: PostgreSQL turns take longer; the bench's time budget
  instrumentPg()
  const systems = []
  try {
    systems.push(await turnchartPg({ baseURL: server.url, url: await freshDatabase(PG1_DATABASES['tc-pg']) }))
    systems.push(await langGraphPg({ baseURL: server.url, url: await freshDatabase(PG1_DATABASES['lg-pg']) }))
    const script = turnScript({ steps, deltas })
    const times = Object.fromEntries(systems.map((s) => [s.id, []]))
    const before = {}
    for (let round = 0; round < warmup + rounds; round++) {
      if (round === warmup) {
        for (const s of systems) before[s.id] = { db: await measurePg(s.url), queries: snapshotQueries(PG1_DATABASES[s.id]) }
      }
      for (const s of systems) {
        const lane = `pg1-${s.id}`
        await server.fill(lane, script)
        const session = await s.newSession(lane)
        const calls0 = (await server.stats()).calls
        let count = 0
        const t0 = performance.now()
        await s.turn(session, `lane:${lane} round ${round}: fetch the ten documents`, () => count++)
        const ms = performance.now() - t0
        const calls = (await server.stats()).calls - calls0
        if (calls !== steps) throw new Error(`pg1 ${s.short}: ${calls} model calls, expected ${steps}`)
        if (count !== steps * deltas) throw new Error(`pg1 ${s.short}: ${count} deltas, expected ${steps * deltas}`)
        if (round >= warmup) times[s.id].push(ms)
      }
      log(`pg1 round ${round + 1}/${warmup + rounds}${round < warmup ? ' (warm-up)' : ''}`)
    }
    const storage = {}
    for (const s of systems) {
      const after = await measurePg(s.url)
      const queries = snapshotQueries(PG1_DATABASES[s.id])
      const b = before[s.id]
      const per = (x) => x / rounds
      storage[s.id] = {
        bytes: per(after.bytes - b.db.bytes),
        payload: per(after.payload - b.db.payload),
        rows: per(after.totalRows - b.db.totalRows),
        tables: Object.fromEntries(Object.keys(after.rows).map((t) => [t, { rows: per(after.rows[t] - (b.db.rows[t] ?? 0)), bytes: per(after.tableBytes[t] - (b.db.tableBytes[t] ?? 0)) }])),
        queries: per(queries.total - b.queries.total),
        queryMs: per(queries.ms - b.queries.ms),
        kinds: Object.fromEntries(Object.entries(queries.kinds).map(([k, n]) => [k, per(n - (b.queries.kinds[k] ?? 0))]).filter(([, n]) => n)),
      }
    }
    return {
      url: redact(ADMIN_URL),
      server: await serverInfo(systems[0].url), // after the measurements: its table is not counted
      versions: packageVersions(['@langchain/langgraph-checkpoint-postgres', 'pg']),
      steps,
      deltas,
      warmup,
      rounds,
      systems: systems.map(({ id, name, short }) => ({ id, name, short, database: PG1_DATABASES[id] })),
      times,
      storage,
    }
  } finally {
    for (const s of systems) await s.close().catch(() => {})
    for (const name of Object.values(PG1_DATABASES)) await dropDatabase(name).catch(() => {})
  }
}

function packageVersions(names) {
  const out = {}
  for (const name of names) {
    try {
      out[name] = JSON.parse(fs.readFileSync(path.join(here, 'node_modules', name, 'package.json'), 'utf8')).version
    } catch {
      out[name] = '?'
    }
  }
  return out
}

/** Version, commit mode, and what a round trip and a small write transaction cost, in `url`'s database (one of ours: dropped later). */
async function serverInfo(url) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const value = async (q) => (await client.query(q)).rows[0]
    const version = (await value('show server_version')).server_version
    const sync = (await value('show synchronous_commit')).synchronous_commit
    // One small write transaction, committed: what each COMMIT costs here (WAL flush).
    // A real table: writes to a temporary one are not WAL-logged, so their commits wait for nothing.
    await client.query('create table bench_commit_probe (x int)')
    const t0 = performance.now()
    for (let i = 0; i < 50; i++) {
      await client.query('begin')
      await client.query('insert into bench_commit_probe values (1)')
      await client.query('commit')
    }
    const commitMs = (performance.now() - t0) / 50
    const t1 = performance.now()
    for (let i = 0; i < 200; i++) await client.query('select 1')
    const roundTripMs = (performance.now() - t1) / 200
    return { version, synchronousCommit: sync, commitMs, roundTripMs }
  } finally {
    await client.end()
  }
}

export function renderPg1(result) {
  const lines = ['## Workload 1 on PostgreSQL', '']
  const p = (s = '') => lines.push(s)
  if (!result) return ''
  if (result.skipped) {
    p(`Skipped: ${result.skipped}.`)
    p()
    return lines.join('\n')
  }
  const { steps, deltas, warmup, rounds, systems, times, storage, server } = result
  const med = Object.fromEntries(systems.map((s) => [s.id, stats(times[s.id])]))
  const lg = med['lg-pg'].median
  p(
    `Workload 1's turn (${steps} steps × ${deltas} deltas, a 1 KB tool result per step but the last) on PostgreSQL ${server.version} at ${result.url}, ` +
      `each system in a fresh database of its own (${systems.map((s) => `\`${s.database}\``).join(', ')}, dropped at the end), interleaved, against the same scripted server; ${warmup} warm-up rounds, ${rounds} measured. ` +
      `Versions: ${Object.entries(result.versions ?? {}).map(([n, v]) => `${n} ${v}`).join(', ')} (the others as in the table above). ` +
      `Both use \`pg\` pools of 10 connections (their defaults). Bytes: growth of the sum of \`pg_total_relation_size\` (heap, TOAST, indexes, free-space and visibility maps) over the system's tables during the measured rounds, per turn; ` +
      `payload: growth of the sum of \`pg_column_size\` of the live rows (values over ~2 KB are TOAST-compressed). Statements: every query each system sent to its database (counted in \`pg\`'s \`Client.query\`), per turn; "ms in PG" sums their round-trip times. ` +
      `Code: bench/pg.mjs, bench/pg-systems.mjs. Here one \`select 1\` round trip takes ${server.roundTripMs.toFixed(2)} ms and a one-row write transaction ${server.commitMs.toFixed(2)} ms (synchronous_commit ${server.synchronousCommit}: each COMMIT waits for the WAL flush).`,
  )
  p()
  p('| system | median ms/turn | min | max | × LangGraph+PG | bytes / turn | payload / turn | rows / turn | statements / turn | transactions / turn | ms in PG / turn |')
  p('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const s of systems) {
    const m = med[s.id]
    const st = storage[s.id]
    p(
      `| ${s.name} | ${fmtMs(m.median)} | ${fmtMs(m.min)} | ${fmtMs(m.max)} | ${(m.median / lg).toFixed(2)} | ${fmtBytes(st.bytes)} | ${fmtBytes(st.payload)} | ` +
        `${st.rows.toFixed(1)} (${Object.entries(st.tables).filter(([, t]) => t.rows).map(([t, v]) => `${t} ${v.rows.toFixed(0)}`).join(', ')}) | ` +
        `${st.queries.toFixed(0)} (${Object.entries(st.kinds).map(([k, n]) => `${k} ${n.toFixed(0)}`).join(', ')}) | ${(st.kinds.begin ?? 0).toFixed(0)} | ${fmtMs(st.queryMs)} |`,
    )
  }
  const timeRatio = med['tc-pg'].median / lg
  const byteRatio = storage['tc-pg'].bytes / storage['lg-pg'].bytes
  const verdict = (ok) => (ok ? 'met' : '**missed**')
  p()
  p(
    `Target 3: turnchart on PostgreSQL ≤ 0.6× LangGraph + PostgreSQL's time, measured **${timeRatio.toFixed(2)}×** (${verdict(timeRatio <= 0.6)}); ` +
      `≤ 0.1× its bytes per turn, measured **${byteRatio.toFixed(3)}×** (${verdict(byteRatio <= 0.1)}; payload ${(storage['tc-pg'].payload / storage['lg-pg'].payload).toFixed(3)}×).`,
  )
  p(`Bytes per turn by table (with its indexes and TOAST): ${systems.map((s) => `${s.short}: ${Object.entries(storage[s.id].tables).filter(([, t]) => t.bytes).map(([t, v]) => `${t} ${fmtBytes(v.bytes)}`).join(', ')}`).join('; ')}.`)
  p()
  const waits = (id) => {
    const st = storage[id]
    const begins = st.kinds.begin ?? 0
    return `${st.queries.toFixed(0)} statements in ${begins.toFixed(0)} transactions per turn (≈ ${fmtMs(st.queries * server.roundTripMs)} ms of round trips at ${server.roundTripMs.toFixed(2)} ms, ≈ ${fmtMs(begins * server.commitMs)} ms of commits at ${server.commitMs.toFixed(2)} ms, on an idle client)`
  }
  p(`Where PostgreSQL time goes: turnchart ${waits('tc-pg')}; LangGraph ${waits('lg-pg')}. How much of that a turn waits for depends on how its writes overlap its streaming; the "ms in PG" column sums the statements' round trips as the client saw them, its event loop's delays included.`)
  p()
  return lines.join('\n')
}

// ---------------------------------------------------------------------------------------
// Workload 5, scale-out (target 4)

const W5_DATABASE = 'bench_w5_pg'

export async function workload5({ server, log = () => {}, W3 = {} }) {
  const missing = await loadPgSystems()
  if (missing) return { skipped: missing }
  const down = await unreachable()
  if (down) return { skipped: `PostgreSQL at ${redact(ADMIN_URL)} did not answer (${down})` }
  const steps = W3.steps ?? 3
  const deltas = W3.deltas ?? 100
  const delayMs = envNumber('BENCH_W5_DELAY_MS', W3.delayMs ?? 20)
  const maxSessions = envNumber('BENCH_W5_MAX_SESSIONS', 800)
  let sessions = envNumber('BENCH_W5_SESSIONS', W3.sessions ?? 200)
  const load = { steps, deltas, delayMs }
  // One process first; if it keeps up (under 85 % of a core and at least 80 % of the turns/s the
  // pacing allows), the load doubles until it does not.
  const single = []
  for (;;) {
    const r = await scaleOutRound({ server, log, processes: 1, sessions, ...load })
    single.push(r)
    if (saturated(r, load) || sessions * 2 > maxSessions) break
    log(`w5: one process's event loop is ${percent(r.demand)} busy at ${sessions} sessions; doubling the load`)
    sessions *= 2
  }
  // Then 2, and with BENCH_W5_REPEATS > 1: (2, 1), (1, 2), ... (A B B A A B ...), so a drift in the
  // machine's load weighs on both alike. One pair by default: the bench's time budget.
  const repeats = envNumber('BENCH_W5_REPEATS', 1)
  const order = []
  for (let i = 0; i < repeats; i++) order.push(...(i % 2 === 0 ? [1, 2] : [2, 1]))
  const runs = [single.at(-1)]
  for (const processes of order.slice(1)) runs.push(await scaleOutRound({ server, log, processes, sessions, ...load }))
  return {
    url: redact(ADMIN_URL),
    database: W5_DATABASE,
    poolMax: process.env.BENCH_W5_POOL_MAX ? Number(process.env.BENCH_W5_POOL_MAX) : undefined,
    ...load,
    sessions,
    tried: single.slice(0, -1).map((r) => ({ sessions: r.sessions, demand: r.demand, turnsPerSecond: r.turnsPerSecond })),
    runs,
  }
}

const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length

/** The runs of one configuration as one: means of turns/s, event-loop demand and CPU seconds. */
function combine(runs) {
  const machine = (key) => mean(runs.map((r) => r.machine[key]))
  return {
    runs: runs.length,
    processes: runs[0].processes,
    turnsPerSecond: mean(runs.map((r) => r.turnsPerSecond)),
    demand: mean(runs.map((r) => r.demand)),
    machine: { cores: runs[0].machine.cores, clientCpuS: machine('clientCpuS'), serverCpuS: machine('serverCpuS'), postgresCpuS: machine('postgresCpuS') },
  }
}

const percent = (x) => (x === undefined || Number.isNaN(x) ? 'n/a' : `${(x * 100).toFixed(0)} %`)

/** BENCH_W5_POOL_MAX: turnchart's pool_max URL parameter (its default: 10 connections per engine). */
function withPool(url) {
  if (!process.env.BENCH_W5_POOL_MAX) return url
  const u = new URL(url)
  u.searchParams.set('pool_max', process.env.BENCH_W5_POOL_MAX)
  return u.toString()
}

/** Turns/s that the server's pacing alone allows. */
const pacedTurnsPerSecond = (sessions, { steps, deltas, delayMs }) => sessions / ((steps * deltas * delayMs) / 1000)
const saturated = (run, load) => (run.demand ?? run.busiest) >= 0.85 || run.turnsPerSecond < 0.8 * pacedTurnsPerSecond(run.sessions, load)

/** One run: `processes` engine processes on one fresh database, the sessions split evenly, started together. */
async function scaleOutRound({ server, log, processes, sessions, steps, deltas, delayMs }) {
  const plainUrl = await freshDatabase(W5_DATABASE)
  const url = withPool(plainUrl) // turnchart's URL (pool_max is turnchart's parameter, not pg's)
  const script = turnScript({ steps, deltas, marker: true, delayMs })
  const lanes = []
  for (let i = 0; i < sessions; i++) {
    const lane = `w5-${processes}p-${sessions}-${i}`
    await server.fill(lane, script)
    lanes.push(lane)
  }
  const children = []
  try {
    const stats0 = await server.stats()
    const share = Math.ceil(sessions / processes)
    for (let i = 0; i < processes; i++) {
      // detached: each engine process in a session (so a scheduling autogroup) of its own, as separate services would be.
      children.push(fork(path.join(here, 'w5.mjs'), [], { detached: true, serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: process.env.BENCH_W5_EXEC_ARGV?.split(' ') ?? [] }))
    }
    const ask = (child, message) =>
      new Promise((resolve, reject) => {
        const onExit = (code) => reject(new Error(`w5: engine process exited with ${code}`))
        child.once('exit', onExit)
        child.once('message', (answer) => {
          child.off('exit', onExit)
          if (answer.error) reject(new Error(`w5: ${answer.error}`))
          else resolve(answer)
        })
        child.send(message)
      })
    // Engines open and sessions are created one process after the other: the migration runs once.
    for (let i = 0; i < processes; i++) await ask(children[i], { cmd: 'setup', baseURL: server.url, url, lanes: lanes.slice(i * share, (i + 1) * share) })
    const cpu0 = machineCpu()
    const serverCpu0 = procCpuSeconds((pid) => pid === server.pid)
    const pgCpu0 = procCpuSeconds((_, comm) => comm === 'postgres')
    const results = await Promise.all(children.map((child) => ask(child, { cmd: 'go', expectDeltas: steps * deltas, database: W5_DATABASE })))
    const pgCpu = procCpuSeconds((_, comm) => comm === 'postgres') - pgCpu0
    const serverCpu = procCpuSeconds((pid) => pid === server.pid) - serverCpu0
    const cpu = machineCpu(cpu0)
    for (const child of children) await ask(child, { cmd: 'close' })
    const stats1 = await server.stats()
    const calls = stats1.calls - stats0.calls
    if (calls !== sessions * steps) throw new Error(`w5 (${processes} processes): ${calls} model calls, expected ${sessions * steps}`)
    if (stats0.pending - stats1.pending !== sessions * steps) throw new Error(`w5 (${processes} processes): ${stats0.pending - stats1.pending} scripted replies used, expected ${sessions * steps}`)
    const exactlyOnce = await checkExactlyOnce(plainUrl, { sessions, steps, processes, share })
    const start = Math.min(...results.map((r) => r.start))
    const end = Math.max(...results.map((r) => r.end))
    const wallS = (end - start) / 1e6
    const delays = new Float64Array(results.reduce((n, r) => n + r.delays.length, 0))
    let at = 0
    for (const r of results) {
      delays.set(r.delays, at)
      at += r.delays.length
    }
    delays.sort()
    const pct = (q) => (delays.length ? delays[Math.min(delays.length - 1, Math.floor(q * delays.length))] : NaN)
    const errors = results.reduce((n, r) => n + r.errors, 0)
    const clientCpuMs = results.reduce((n, r) => n + r.cpuMs, 0)
    const queries = results.reduce((n, r) => n + r.queries, 0)
    const begins = results.reduce((n, r) => n + (r.kinds.begin ?? 0), 0)
    const run = {
      processes,
      sessions,
      turns: sessions,
      errors,
      firstError: results.find((r) => r.firstError)?.firstError,
      wallS,
      turnsPerSecond: (sessions - errors) / wallS,
      clientCpuMsPerTurn: clientCpuMs / sessions,
      perProcess: results.map((r) => {
        const wallMs = (r.end - r.start) / 1000
        return {
          turns: r.turns,
          wallS: wallMs / 1000,
          cpuMs: r.cpuMs,
          busy: r.cpuMs / wallMs,
          // The event-loop thread: share of the run on a CPU, and runnable but waiting for one.
          loopRunning: r.loopRunMs === undefined ? undefined : r.loopRunMs / wallMs,
          loopWaiting: r.loopWaitMs === undefined ? undefined : r.loopWaitMs / wallMs,
          loopP99: r.loopP99,
          loopMax: r.loopMax,
          peakRssMb: r.peakRssMb,
        }
      }),
      busiest: Math.max(...results.map((r) => r.cpuMs / ((r.end - r.start) / 1000))),
      // How much CPU the busiest event loop wanted: on a CPU or waiting for one (schedstat).
      demand: Math.max(...results.map((r) => (r.loopRunMs === undefined ? r.cpuMs : r.loopRunMs + r.loopWaitMs) / ((r.end - r.start) / 1000))),
      turnSeconds: stats(results.flatMap((r) => r.turnMs).map((ms) => ms / 1000)),
      firstDeltaSeconds: stats(results.flatMap((r) => r.firstDeltaMs).map((ms) => ms / 1000)),
      p50: pct(0.5),
      p99: pct(0.99),
      maxDelay: delays.length ? delays[delays.length - 1] : NaN,
      samples: delays.length,
      queriesPerTurn: queries / sessions,
      transactionsPerTurn: begins / sessions,
      machine: { cores: cpu.cores, busy: cpu.busy, serverCpuS: serverCpu, postgresCpuS: pgCpu, clientCpuS: clientCpuMs / 1000 },
      exactlyOnce,
    }
    log(
      `w5 ${processes} process(es), ${sessions} sessions: ${run.turnsPerSecond.toFixed(1)} turns/s, client CPU ${run.clientCpuMsPerTurn.toFixed(1)} ms/turn, ` +
        `busiest ${percent(run.busiest)} CPU, event loop ${run.perProcess.map((x) => `${percent(x.loopRunning)} running + ${percent(x.loopWaiting)} waiting`).join(', ')}, p99 ${run.p99.toFixed(0)} ms, errors ${errors}, exactly once: ${exactlyOnce.ok ? 'yes' : exactlyOnce.problems.join('; ')}`,
    )
    return run
  } finally {
    for (const child of children) if (child.connected) child.disconnect()
    await Promise.all(children.map((child) => (child.exitCode === null && child.signalCode === null ? new Promise((resolve) => child.once('exit', resolve)) : null)))
    for (const lane of lanes) await server.drop(lane)
    await dropDatabase(W5_DATABASE).catch(() => {})
  }
}

/** What the rows say: every session has one turn, completed, claimed once, by the process that started it; no duplicate messages or parts. */
export async function checkExactlyOnce(url, { sessions, steps, processes, share }) {
  if (!pg) await loadPgSystems()
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const rows = async (q, values) => (await client.query(q, values)).rows
    const one = async (q, values) => Number(Object.values((await rows(q, values))[0])[0])
    const byOutcome = Object.fromEntries((await rows("select coalesce(outcome, 'open:' || state) as outcome, count(*)::int as n from turnchart_turns group by 1")).map((r) => [r.outcome, r.n]))
    const sessionRows = await one('select count(*) from turnchart_sessions')
    const sessionsWithOtherThanOneTurn = await one('select count(*) from turnchart_sessions s where (select count(*) from turnchart_turns t where t.session_id = s.id) <> 1')
    const reclaimed = await one('select count(*) from turnchart_turns where epoch <> 0')
    const owners = (await rows('select owner, count(*)::int as n from turnchart_turns group by owner')).map((r) => r.n).sort((a, b) => a - b)
    const badUserMessages = await one("select count(*) from turnchart_sessions s where (select count(*) from turnchart_messages m where m.session_id = s.id and m.role = 'user') <> 1")
    const assistantCounts = (await rows("select n, count(*)::int as sessions from (select s.id, (select count(*)::int from turnchart_messages m where m.session_id = s.id and m.role = 'assistant') as n from turnchart_sessions s) x group by n")).map((r) => `${r.n}×${r.sessions}`)
    const badParts = await one(
      "select count(*) from turnchart_sessions s where (select count(*) from turnchart_parts p where p.session_id = s.id and p.type = 'tool') <> $1 or (select count(*) from turnchart_parts p where p.session_id = s.id and p.type = 'step-start') <> $2",
      [steps - 1, steps],
    )
    const problems = []
    if (sessionRows !== sessions) problems.push(`${sessionRows} sessions, expected ${sessions}`)
    if (byOutcome.completed !== sessions || Object.keys(byOutcome).length !== 1) problems.push(`turns by outcome ${JSON.stringify(byOutcome)}, expected ${sessions} completed`)
    if (sessionsWithOtherThanOneTurn) problems.push(`${sessionsWithOtherThanOneTurn} sessions without exactly one turn`)
    if (reclaimed) problems.push(`${reclaimed} turns claimed again (epoch > 0)`)
    const expectedOwners = Array.from({ length: processes }, (_, i) => Math.min(share, sessions - i * share)).sort((a, b) => a - b)
    if (JSON.stringify(owners) !== JSON.stringify(expectedOwners)) problems.push(`turns per owner ${owners.join('/')}, expected ${expectedOwners.join('/')}`)
    if (badUserMessages) problems.push(`${badUserMessages} sessions without exactly one user message`)
    if (assistantCounts.length !== 1) problems.push(`assistant messages per session differ (${assistantCounts.join(', ')})`)
    if (badParts) problems.push(`${badParts} sessions without ${steps - 1} tool parts and ${steps} steps`)
    return { ok: problems.length === 0, problems, byOutcome, owners, assistantPerSession: assistantCounts.join(', ') }
  } finally {
    await client.end()
  }
}

/** Machine-wide CPU: with a previous reading, the share of all cores busy since then. */
function machineCpu(previous) {
  const now = os.cpus().map((c) => c.times)
  const sum = (list, pick) => list.reduce((n, t) => n + pick(t), 0)
  const reading = { total: sum(now, (t) => t.user + t.nice + t.sys + t.idle + t.irq), idle: sum(now, (t) => t.idle), cores: now.length }
  if (!previous) return reading
  return { cores: now.length, busy: 1 - (reading.idle - previous.idle) / (reading.total - previous.total) }
}

export function renderW5(result) {
  if (!result) return ''
  const lines = ['## Workload 5: scale-out on PostgreSQL', '']
  const p = (s = '') => lines.push(s)
  if (result.skipped) {
    p(`Skipped: ${result.skipped}.`)
    p()
    return lines.join('\n')
  }
  const { sessions, steps, deltas, delayMs, runs, tried } = result
  const one = combine(runs.filter((r) => r.processes === 1))
  const two = combine(runs.filter((r) => r.processes === 2))
  p(
    `Workload 3's load on PostgreSQL (${result.url}, a fresh database \`${result.database}\` per run, dropped after it): ${sessions} sessions each start a ${steps}-step turn at the same moment ` +
      `(${deltas} deltas per step, the server paces chunks ${delayMs} ms apart), in one turnchart engine process, and split over two processes (${Math.ceil(sessions / 2)} sessions each), in the order ${runs.map((r) => r.processes).join(', ')} (BENCH_W5_REPEATS=2 runs 1, 2, 2, 1, so that a drift in the machine's load weighs on both alike) ` +
      `on the same database, told to start at the same moment once both have opened their engine and created their sessions. Each engine uses ${result.poolMax ? `a pool of ${result.poolMax} connections (BENCH_W5_POOL_MAX)` : 'its default pool (10 connections)'} and runs in a session of its own (\`detached\`, so a scheduler autogroup of its own, like separate services; in the bench's session they would share one group's CPU against the machine's other work). Per process: CPU busy is its CPU time over the run's wall time; the event loop's thread time on a CPU and runnable but waiting for one come from \`/proc/thread-self/schedstat\` (their sum near 100 % means the loop always had work: saturated, whether by its own CPU or by the machine). ` +
      `turns/s: turns over the time from the first process's start to the last one's end; client CPU: user+system time of the engine processes during the turns, summed; ` +
      `delta delay as in workload 3. Exactly once: after each run the turn, message and part rows are counted per session (one turn per session, completed, never claimed again, owned by the process that started it; one user message; the same number of assistant messages in every session; ${steps - 1} tool parts and ${steps} steps), ` +
      `and the scripted server must have answered exactly ${steps} model calls per turn (otherwise the run fails). Code: bench/pg.mjs, bench/w5.mjs.` +
      (tried.length ? ` Load: ${tried.map((t) => `${t.sessions} sessions kept one process's event loop only ${percent(t.demand)} busy at ${t.turnsPerSecond.toFixed(1)} turns/s`).join(', ')}, so the load was doubled to ${sessions} sessions.` : ''),
  )
  p()
  p('| engine processes | sessions | turns/s | wall s | client CPU ms / turn (sum) | per process: CPU busy, event loop on a CPU / waiting for one | turn s p50 / p99 | first delta s p50 / p99 | p50 delay ms | p99 delay ms | max delay ms | event-loop delay p99 / max ms | statements / turn | transactions / turn | machine CPU busy | server / PostgreSQL CPU s | errors | exactly once |')
  p('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const r of runs) {
    p(
      `| ${r.processes} | ${r.sessions} | ${r.turnsPerSecond.toFixed(1)} | ${r.wallS.toFixed(2)} | ${r.clientCpuMsPerTurn.toFixed(1)} | ${r.perProcess.map((x) => `${percent(x.busy)}, ${percent(x.loopRunning)} / ${percent(x.loopWaiting)}`).join('; ')} | ` +
        `${r.turnSeconds.median.toFixed(1)} / ${r.turnSeconds.p99.toFixed(1)} | ${r.firstDeltaSeconds.median.toFixed(2)} / ${r.firstDeltaSeconds.p99.toFixed(2)} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.maxDelay.toFixed(1)} | ${r.perProcess.map((x) => `${x.loopP99.toFixed(0)} / ${x.loopMax.toFixed(0)}`).join(', ')} | ` +
        `${r.queriesPerTurn.toFixed(1)} | ${r.transactionsPerTurn.toFixed(1)} | ${percent(r.machine.busy)} of ${r.machine.cores} cores (this workload: ${percent((r.machine.clientCpuS + r.machine.serverCpuS + r.machine.postgresCpuS) / (r.wallS * r.machine.cores))}) | ${r.machine.serverCpuS.toFixed(1)} / ${r.machine.postgresCpuS.toFixed(1)} | ` +
        `${r.errors}${r.firstError ? ` (${r.firstError.slice(0, 80)})` : ''} | ${r.exactlyOnce.ok ? 'yes' : `**no**: ${r.exactlyOnce.problems.join('; ')}`} |`,
    )
  }
  const ratio = two.turnsPerSecond / one.turnsPerSecond // means over the runs of each
  const paced = pacedTurnsPerSecond(sessions, result)
  const full = runs.filter((r) => r.processes === 1).every((r) => saturated(r, result))
  const allOnce = runs.every((r) => r.exactlyOnce.ok && !r.errors)
  const met = ratio >= 1.5 && full && allOnce
  p()
  p(
    `Target 4: two processes ≥ 1.5× the turns/s of one at a load that saturates one, every turn completed exactly once. Measured **${ratio.toFixed(2)}×** ` +
      `(${one.runs > 1 ? `means of ${one.runs} runs each; ` : ''}one process: its event loop wanted ${percent(one.demand)} of a core, it reached ${one.turnsPerSecond.toFixed(1)} of the ${paced.toFixed(1)} turns/s the pacing allows: ${full ? 'saturated' : '**not saturated**'}), ` +
      `exactly once: ${allOnce ? 'yes' : '**no**'} — ${met ? 'met' : '**missed**'}.`,
  )
  // What the CPU these runs consumed allows on an otherwise idle machine of this many cores: one
  // process cannot finish before its own CPU time (one thread) nor before all the CPU (engine,
  // server, PostgreSQL) fits on the cores; two processes likewise with half the engine CPU each.
  const cores = one.machine.cores
  p()
  const floorS = (r) => Math.max(r.machine.clientCpuS / r.processes, (r.machine.clientCpuS + r.machine.serverCpuS + r.machine.postgresCpuS) / cores)
  const ceiling = floorS(one) / floorS(two)
  const atCores = (n) => Math.max(one.machine.clientCpuS, (one.machine.clientCpuS + one.machine.serverCpuS + one.machine.postgresCpuS) / n) / Math.max(two.machine.clientCpuS / 2, (two.machine.clientCpuS + two.machine.serverCpuS + two.machine.postgresCpuS) / n)
  p(
    `CPU bound${one.runs > 1 ? ' (means per run)' : ''}: one process used ${one.machine.clientCpuS.toFixed(1)} s of engine CPU (the scripted server ${one.machine.serverCpuS.toFixed(1)} s, PostgreSQL ${one.machine.postgresCpuS.toFixed(1)} s), two used ${two.machine.clientCpuS.toFixed(1)} s together (${two.machine.serverCpuS.toFixed(1)} s, ${two.machine.postgresCpuS.toFixed(1)} s). ` +
      `A run cannot end before an engine process's CPU time is spent nor before all of it fits on the cores, so on an otherwise idle ${cores}-core machine two processes could reach at most **${ceiling.toFixed(2)}×** the turns/s of one with these CPU costs (${atCores(4).toFixed(2)}× with 4 cores). ` +
      `When other work keeps the machine busy (the "machine CPU busy" column against "this workload"), each engine process gets a scheduler group's share of it, so two processes get more CPU than one and the measured ratio rises above this bound; on an idle machine the bound holds.`,
  )
  p()
  return lines.join('\n')
}

// ---------------------------------------------------------------------------------------
// The targets of both workloads, in run.mjs's summary shape ({ target, measured, met }).

export function pg1Targets(result) {
  if (!result || result.skipped) return []
  const median = (id) => stats(result.times[id]).median
  const time = median('tc-pg') / median('lg-pg')
  const bytes = result.storage['tc-pg'].bytes / result.storage['lg-pg'].bytes
  return [
    { target: 'turnchart on PostgreSQL ≤ 0.6× LangGraph + PostgreSQL checkpointer (median ms/turn)', measured: `${time.toFixed(2)}× (${fmtMs(median('tc-pg'))} ms / ${fmtMs(median('lg-pg'))} ms)`, met: time <= 0.6 },
    { target: 'turnchart on PostgreSQL ≤ 0.1× LangGraph + PostgreSQL checkpointer (bytes/turn)', measured: `${bytes.toFixed(3)}× (${fmtBytes(result.storage['tc-pg'].bytes)} / ${fmtBytes(result.storage['lg-pg'].bytes)})`, met: bytes <= 0.1 },
  ]
}

export function w5Targets(result) {
  if (!result || result.skipped) return []
  const one = combine(result.runs.filter((r) => r.processes === 1))
  const two = combine(result.runs.filter((r) => r.processes === 2))
  const ratio = two.turnsPerSecond / one.turnsPerSecond
  const full = result.runs.filter((r) => r.processes === 1).every((r) => saturated(r, result))
  const allOnce = result.runs.every((r) => r.exactlyOnce.ok && !r.errors)
  return [
    { target: 'two engine processes ≥ 1.5× the turns/s of one, at a load that saturates one', measured: `${ratio.toFixed(2)}× (${two.turnsPerSecond.toFixed(1)} / ${one.turnsPerSecond.toFixed(1)} turns/s; one process ${full ? 'saturated' : 'not saturated'})`, met: ratio >= 1.5 && full },
    { target: 'every turn completed exactly once', measured: allOnce ? 'yes, in every run' : 'no', met: allOnce },
  ]
}
