// The fleet run (issue 39, item 6): four engine processes (bench/fleet-worker.mjs) on one
// PostgreSQL database, 200 sessions prompted turn after turn; every few seconds one engine is
// SIGKILLed or SIGTERMed (a handoff, `close({ handoff: true })`) and a new one started in its
// place; once in the run every backend of the fleet is killed (`pg_terminate_backend`). Then
// the rows are checked: every turn completed exactly once (its log has one final row, no turn
// failed or was left open), and no tool call ran twice (each engine reports each run of its
// tool). Not a test: a measurement, printed as a Markdown page.
//
// Each turn is 2 steps: the model calls the tool `work`, then answers (12 text chunks 25 ms
// apart per step, from a model server in this process that answers by what the request holds,
// so any engine can run any step).
//
// Figures:
// - turns/s: turns completed over the chaos phase's wall time;
// - recovery after a kill: from the SIGKILL to the first row another engine writes on each
//   turn the killed engine held (its `turn.crashed`), p50/p99;
// - handoff pause: from the handing engine's last row of a turn (its step gate's) to the
//   taking engine's first (`turn.crashed` from `step-gate`), p50/p99;
// - PostgreSQL commits per turn: `xact_commit` of the fleet's own database over the run (every
//   transaction the server committed, reads included, the driver's own subtracted), per turn.
// And, as a model, how many turns/s one PostgreSQL server carries at that many commits per turn,
// from a one-row write commit rate measured on the same server at the end of the run.
//
//   npm run build && node bench/fleet.mjs
// Calls in doubt (a tool running when its engine was SIGKILLed) are settled as an app settles
// them: the tool's effect is a row of the app's own, one per execution key, and its `reconcile`
// reads it (ran: its result; did not: run it again). With BENCH_FLEET_MULTIHOST=1 each engine runs
// in a UTS namespace of its own (`unshare --uts`, root: another host name), so no engine can see
// another's pid and a dead engine is noticed only as a multi-host fleet notices it (its liveness
// on the database, else its leases).
//
// Knobs: BENCH_PG_URL (else TURNCHART_PG_URL, else postgres://postgres@127.0.0.1:5432/test; a
// database `bench_fleet_<time>` is created there and dropped after), BENCH_FLEET_SECONDS (chaos
// phase, default 75), BENCH_FLEET_SESSIONS (200), BENCH_FLEET_ENGINES (4), BENCH_FLEET_EVERY_MS
// (a kill or a handoff this often, default 4000), BENCH_FLEET_CHAOS=0 (none: the steady state).
import { fork, spawn } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'

const here = path.dirname(fileURLToPath(import.meta.url))
const dist = process.env.TURNCHART_DIST ?? path.join(here, '../dist')
const { createEngine } = await import(pathToFileURL(path.join(dist, 'esm', 'index.mjs')).href)

process.on('uncaughtException', (error) => {
  // (a pooled connection of this process ended by the backends' kill: the pool drops it)
  if (error?.code === '57P01') return console.error(`fleet parent: a connection ended by the backends' kill (${error.message})`)
  console.error(`fleet parent: uncaught ${error.stack}`)
  process.exit(70)
})
const BASE = process.env.BENCH_PG_URL ?? process.env.TURNCHART_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const SECONDS = Number(process.env.BENCH_FLEET_SECONDS ?? 75)
const SESSIONS = Number(process.env.BENCH_FLEET_SESSIONS ?? 200)
const ENGINES = Number(process.env.BENCH_FLEET_ENGINES ?? 4)
const EVERY_MS = Number(process.env.BENCH_FLEET_EVERY_MS ?? 4000)
const MULTIHOST = process.env.BENCH_FLEET_MULTIHOST === '1'
// BENCH_FLEET_CHAOS=0: no kill, no handoff, no backends' kill: the fleet's steady state (its commits per turn without takeovers).
const CHAOS = process.env.BENCH_FLEET_CHAOS !== '0'
const CHUNKS = 12
const CHUNK_MS = 25

const runId = `fleet_${Date.now().toString(36)}`
const dbName = `bench_${runId}`
const appName = `turnchart_${runId}` // names the fleet's backends: only those are killed (the server is shared)

function urlOf(database, params = {}) {
  const url = new URL(BASE)
  url.pathname = `/${database}`
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v)
  return url.toString()
}
const adminUrl = urlOf(new URL(BASE).pathname.slice(1) || 'postgres')
const fleetUrl = urlOf(dbName, { application_name: appName })

function pct(values, p) {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}
const ms = (v) => (Number.isFinite(v) ? `${v.toFixed(v < 10 ? 1 : 0)} ms` : '–')

// ---- the model server: a tool call first, the answer once the tool's result is in the request.
let modelCalls = 0
const callsByTurn = new Map()
function lastUserText(messages) {
  const user = [...messages].reverse().find((m) => m.role === 'user')
  if (!user) return ''
  return typeof user.content === 'string' ? user.content : user.content.map((p) => p.text ?? '').join('')
}
const modelServer = http.createServer((req, res) => {
  let body = ''
  req.on('data', (d) => (body += d))
  req.on('end', async () => {
    modelCalls++
    const request = JSON.parse(body)
    const key = lastUserText(request.messages)
    callsByTurn.set(key, (callsByTurn.get(key) ?? 0) + 1)
    // The answer once this turn's tool result is in the history (after its prompt), else the tool call.
    const lastUser = request.messages.map((m) => m.role).lastIndexOf('user')
    const answering = request.messages.slice(lastUser + 1).some((m) => m.role === 'tool')
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const send = (choices, extra = {}) => res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'fleet-model', choices, ...extra })}\n\n`)
    let gone = false
    res.on('close', () => (gone = true))
    for (let i = 0; i < CHUNKS && !gone; i++) {
      send([{ index: 0, delta: { ...(i === 0 ? { role: 'assistant' } : {}), content: `${answering ? 'a' : 'w'}${i} ` }, finish_reason: null }])
      await new Promise((r) => setTimeout(r, CHUNK_MS))
    }
    if (gone) return
    if (!answering) send([{ index: 0, delta: { tool_calls: [{ index: 0, id: `call_${modelCalls}`, type: 'function', function: { name: 'work', arguments: JSON.stringify({ key }) } }] }, finish_reason: null }])
    send([{ index: 0, delta: {}, finish_reason: answering ? 'stop' : 'tool_calls' }])
    send([], { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })
    res.end('data: [DONE]\n\n')
  })
})
await new Promise((r) => modelServer.listen(0, '127.0.0.1', r))
const modelUrl = `http://127.0.0.1:${modelServer.address().port}/v1`

// ---- the database and the sessions
const admin = new pg.Client({ connectionString: adminUrl })
await admin.connect()
await admin.query(`create database "${dbName}"`)
{
  // The app's own record of the tool's effect (bench/fleet-worker.mjs).
  const app = new pg.Client({ connectionString: urlOf(dbName) })
  await app.connect()
  await app.query('create table fleet_work (idempotency_key text primary key, key text not null, runs int not null)')
  await app.end()
}
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')
const setup = await createEngine({ database: urlOf(dbName, { application_name: `${appName}_setup` }), model: createOpenAICompatible({ name: 'fleet', baseURL: modelUrl, apiKey: 'k' })('fleet-model'), recovery: { onOpen: false, intervalMs: 0 }, notifications: false })
const sessions = []
for (let i = 0; i < SESSIONS; i++) sessions.push((await setup.createSession()).id)
await setup.close()
const db = new pg.Client({ connectionString: urlOf(dbName, { application_name: `${appName}_driver` }) })
await db.connect()
let driverQueries = 0
const query = (text, values) => (driverQueries++, db.query(text, values))

// ---- the engines
const sent = new Map() // sessionId -> turns the session had when its prompt was sent
const refusals = {}
const sentTo = new Map() // sessionId -> the worker it was sent to
const turnNo = new Map()
const workers = new Map() // slot -> { child, pid, since }
const reconciled = { ran: 0, ranAgain: 0 }
let hosts = 0
const events = [] // { kind: 'kill' | 'handoff' | 'backends', at, pid }
let loadBefore = os.loadavg()
function startWorker(slot) {
  return new Promise((resolve, reject) => {
    const script = path.join(here, 'fleet-worker.mjs')
    const child = MULTIHOST
      ? // a host of its own: `unshare` and `sh` exec into node, so the pid is the engine's
        spawn('unshare', ['--uts', 'sh', '-c', 'hostname "$0" && exec "$@"', `fleet-host-${++hosts}`, process.execPath, script, fleetUrl, modelUrl], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
      : fork(script, [fleetUrl, modelUrl], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    const worker = { child, pid: child.pid, slot, ready: false }
    child.on('message', (m) => {
      if (m.type === 'ready') {
        worker.ready = true
        resolve(worker)
      } else if (m.type === 'reconciled') reconciled[m.ran ? 'ran' : 'ranAgain']++
      else if (m.type === 'refused') (sent.delete(m.sessionId), (refusals[m.error] = (refusals[m.error] ?? 0) + 1))
      else if (m.type === 'handed-off') worker.handedOffMs = m.ms
    })
    child.once('exit', (code, signal) => {
      if (workers.get(slot) === worker) workers.delete(slot)
      // Prompts it may not have stored: sent again by the driver if they were not.
      for (const [sessionId, to] of sentTo) if (to === worker) (sent.delete(sessionId), sentTo.delete(sessionId))
      if (!worker.ready) reject(new Error(`worker exited before ready (${code ?? signal})`))
    })
    workers.set(slot, worker)
  })
}
await Promise.all(Array.from({ length: ENGINES }, (_, slot) => startWorker(slot)))

// ---- the driver: each idle session gets its next prompt, sent to a random ready engine
let stopping = false
async function drive() {
  const { rows } = await query(
    `select s.id, count(t.id)::int as turns, coalesce(bool_or(t.id is not null and t.outcome is null), false) as open
       from turnchart_sessions s left join turnchart_turns t on t.session_id = s.id group by s.id`,
  )
  const ready = [...workers.values()].filter((w) => w.ready && !w.leaving)
  for (const row of rows) {
    const before = sent.get(row.id)
    if (before !== undefined && row.turns > before) (sent.delete(row.id), sentTo.delete(row.id))
    if (stopping || row.open || sent.has(row.id) || ready.length === 0) continue
    const worker = ready[Math.floor(Math.random() * ready.length)]
    const n = (turnNo.get(row.id) ?? 0) + 1
    turnNo.set(row.id, n)
    sent.set(row.id, row.turns)
    sentTo.set(row.id, worker)
    worker.child.send({ type: 'prompt', sessionId: row.id, text: `fleet ${row.id} turn ${n}` })
  }
}

async function openTurnsOf(owner) {
  const { rows } = await query(`select id from turnchart_turns where outcome is null and owner like $1`, [`%:${owner}:%`])
  return rows.map((r) => r.id)
}

const commitsOf = async () => {
  const c = new pg.Client({ connectionString: adminUrl })
  await c.connect()
  await c.query('select pg_stat_force_next_flush()').catch(() => undefined)
  const { rows } = await c.query('select xact_commit::bigint as n from pg_stat_database where datname = $1', [dbName])
  await c.end()
  return Number(rows[0].n)
}
await new Promise((r) => setTimeout(r, 1200))
const commitsBefore = await commitsOf()
const driverBefore = driverQueries
const { rows: turnsAtStart } = await query('select count(*)::int as n from turnchart_turns where outcome is not null')
const started = Date.now()
const kills = [] // { at, pid, turns: [ids] }
let chaos = 0
const driving = setInterval(() => void drive().catch((error) => console.error(`drive: ${error.message}`)), 100)
const backendsAt = started + (SECONDS * 1000) / 2
let backendsKilled = false
while (Date.now() - started < SECONDS * 1000) {
  await new Promise((r) => setTimeout(r, CHAOS ? EVERY_MS : SECONDS * 1000))
  if (!CHAOS) break
  if (!backendsKilled && Date.now() >= backendsAt) {
    backendsKilled = true
    const backendsKillAt = Date.now()
    const { rows } = await admin.query(`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where application_name = $1 and datname = $2`, [appName, dbName])
    events.push({ kind: 'backends', at: backendsKillAt, killed: rows[0].n })
  }
  const candidates = [...workers.values()].filter((w) => w.ready && !w.leaving)
  if (candidates.length < ENGINES) continue
  const victim = candidates[Math.floor(Math.random() * candidates.length)]
  const kind = chaos++ % 2 === 0 ? 'kill' : 'handoff'
  victim.leaving = true
  if (kind === 'kill') {
    const held = await openTurnsOf(victim.pid)
    const at = Date.now()
    victim.child.kill('SIGKILL')
    kills.push({ at, pid: victim.pid, turns: held })
    events.push({ kind, at, pid: victim.pid, turns: held.length })
  } else {
    events.push({ kind, at: Date.now(), pid: victim.pid })
    victim.child.kill('SIGTERM')
  }
  // Its replacement starts at once (a deploy starts the new version while the old one drains).
  const slot = victim.slot
  workers.delete(slot)
  void startWorker(slot).catch((error) => console.error(error.message))
}
const chaosMs = Date.now() - started

const { rows: turnsAtChaosEnd } = await query('select count(*)::int as n from turnchart_turns where outcome is not null')
stopping = true
// Drain: no new prompt; every open turn ends (a killed engine's by recovery).
const drainStart = Date.now()
for (;;) {
  const { rows } = await query('select count(*)::int as n from turnchart_turns where outcome is null')
  if (rows[0].n === 0 && sent.size === 0) break
  if (Date.now() - drainStart > 90_000) break
  await new Promise((r) => setTimeout(r, 250))
  await drive().catch(() => undefined)
}
clearInterval(driving)
await new Promise((r) => setTimeout(r, 1200))
const commitsAfter = await commitsOf()
const driverAfter = driverQueries
const loadAfter = os.loadavg()

// ---- checks
const { rows: turns } = await query('select id, session_id, outcome, owner, error, updated_at::bigint as updated_at from turnchart_turns')
const { rows: finals } = await query(`select turn_id, count(*)::int as n from turnchart_transitions where to_state in ('completed','failed','aborted') group by turn_id`)
const { rows: rows } = await query('select turn_id, seq, from_state, event_type, to_state, at::bigint as at from turnchart_transitions order by turn_id, seq')
const finalsOf = new Map(finals.map((r) => [r.turn_id, r.n]))
const problems = []
const outcomes = {}
const backendsKilledAt = events.find((e) => e.kind === 'backends')?.at ?? Infinity
const failedByKill = []
for (const t of turns) {
  outcomes[t.outcome ?? 'open'] = (outcomes[t.outcome ?? 'open'] ?? 0) + 1
  // A write the backends' kill cut fails its turn (docs/durability.md: a StorageError, final): counted apart.
  const error = t.error ? JSON.parse(t.error) : null
  if (t.outcome === 'failed' && error?.name === 'StorageError' && Math.abs(t.updated_at - backendsKilledAt) < 10_000) failedByKill.push(t.id)
  else if (t.outcome !== 'completed') problems.push(`turn ${t.id}: ${t.outcome ?? 'open'}${error ? ` (${error.name}: ${error.message})` : ''}`)
  if ((finalsOf.get(t.id) ?? 0) !== 1) problems.push(`turn ${t.id}: ${finalsOf.get(t.id) ?? 0} final rows`)
}
// Ran twice: by the app's own record (a run whose report a SIGKILL cut is counted there too).
const { rows: work } = await query('select key, runs from fleet_work')
const twice = work.filter((r) => r.runs > 1).map((r) => [r.key, r.runs])
// Turns that waited on a call in doubt (its reconcile could not tell): none while the record answers.
const { rows: inDoubt } = await query(`select distinct turn_id from turnchart_transitions where to_state = 'call-in-doubt'`)
for (const [key, n] of twice) problems.push(`tool ran ${n} times for ${key}`)
// The logs of the turns with a problem, for whoever reads why.
const { rows: keyed } = await query(`select m.turn_id, p.data from turnchart_parts p join turnchart_messages m on m.id = p.message_id where p.type = 'text' and m.role = 'user'`)
const turnOfKey = new Map(keyed.map((r) => [JSON.parse(r.data).text, r.turn_id]))
const logOf = new Map()
for (const r of rows) {
  if (!logOf.has(r.turn_id)) logOf.set(r.turn_id, [])
  logOf.get(r.turn_id).push({ ...r, at: Number(r.at) })
}
// Handoff pauses: a row into step-gate, then the next engine's takeover from step-gate.
const pauses = []
for (const log of logOf.values()) {
  for (let i = 1; i < log.length; i++) {
    if (log[i].event_type === 'turn.crashed' && log[i].from_state === 'step-gate' && log[i - 1].to_state === 'step-gate') pauses.push(log[i].at - log[i - 1].at)
  }
}
// Recovery after a kill: from the SIGKILL to the first row another engine wrote on each turn the killed one held.
const recoveries = []
for (const kill of kills) {
  for (const id of kill.turns) {
    const next = (logOf.get(id) ?? []).find((r) => r.at >= kill.at && (r.event_type === 'turn.crashed' || r.event_type === 'turn.start'))
    if (next) recoveries.push(next.at - kill.at)
  }
}
const problemTurns = [...turns.filter((t) => t.outcome !== 'completed').map((t) => t.id), ...twice.map(([key]) => turnOfKey.get(key))].filter(Boolean).slice(0, 4)
const details = problemTurns.map((id) => ({
  turnId: id,
  error: turns.find((t) => t.id === id)?.outcome,
  log: (logOf.get(id) ?? []).map((r) => `${r.at} ${r.from_state} --${r.event_type}--> ${r.to_state}`),
}))
const completedInChaos = turnsAtChaosEnd[0].n - turnsAtStart[0].n // (ended: completed, or failed by the backends' kill)
const completed = turns.filter((t) => t.outcome === 'completed').length
const commits = commitsAfter - commitsBefore - (driverAfter - driverBefore)
const perTurn = commits / Math.max(1, completed)
const calls = [...callsByTurn.values()]
const extraCalls = calls.reduce((a, n) => a + Math.max(0, n - 2), 0)

// ---- the model's input: one PostgreSQL server's rate of one-row write commits, 8 connections at once, 3 s
await admin.query(`select 1`)
const capacityDb = new pg.Pool({ connectionString: urlOf(dbName, { application_name: `${appName}_capacity` }), max: 8 })
await capacityDb.query('create table fleet_capacity (id serial primary key, v text)')
let capacityCommits = 0
const capacityEnd = Date.now() + 3000
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (Date.now() < capacityEnd) {
      await capacityDb.query(`insert into fleet_capacity (v) values ('x')`)
      capacityCommits++
    }
  }),
)
const commitRate = capacityCommits / 3
await capacityDb.end()

// ---- teardown
for (const w of workers.values()) w.child.kill('SIGKILL')
await db.end()
await admin.query(`drop database if exists "${dbName}" with (force)`)
await admin.end()
modelServer.close()

const result = {
  at: new Date().toISOString(),
  engines: ENGINES,
  sessions: SESSIONS,
  chaosSeconds: chaosMs / 1000,
  turnsCompleted: completed,
  failedByBackendsKill: failedByKill.length,
  turnsInChaos: completedInChaos,
  turnsPerSecond: completedInChaos / (chaosMs / 1000),
  kills: kills.length,
  handoffs: events.filter((e) => e.kind === 'handoff').length,
  backendsKilled: events.find((e) => e.kind === 'backends')?.killed ?? 0,
  recovery: { n: recoveries.length, p50: pct(recoveries, 50), p99: pct(recoveries, 99) },
  handoffPause: { n: pauses.length, p50: pct(pauses, 50), p99: pct(pauses, 99) },
  commitsPerTurn: perTurn,
  commitRate,
  modelCalls,
  extraModelCalls: extraCalls,
  multiHost: MULTIHOST,
  toolRuns: work.reduce((a, r) => a + r.runs, 0),
  callsInDoubt: { settledAsRan: reconciled.ran, ranAgain: reconciled.ranAgain, turnsThatWaited: inDoubt.length },
  toolRunsTwice: twice.length,
  outcomes,
  problems: problems.slice(0, 20),
  problemCount: problems.length,
  details,
  events,
  load: { before: loadBefore, after: loadAfter },
  cpus: os.cpus().length,
}
fs.mkdirSync(path.join(here, 'results'), { recursive: true })
fs.writeFileSync(path.join(here, 'results', `fleet-${result.at.replace(/[:.]/g, '-')}.json`), JSON.stringify(result, null, 2))

const modelTurns = commitRate / perTurn
console.log(`## Fleet run (PostgreSQL)

Mode: ${MULTIHOST ? 'multi-host (each engine its own host name: a dead engine is noticed by its liveness on the database, else its leases)' : 'one host (an engine sees that a dead engine\'s pid is gone)'}.

${ENGINES} engine processes, ${SESSIONS} sessions, ${CHAOS ? `${result.chaosSeconds.toFixed(0)} s of chaos (every ${EVERY_MS / 1000} s one engine SIGKILLed or handed off, and restarted; the fleet's backends killed once, ${result.backendsKilled} of them)` : `${result.chaosSeconds.toFixed(0)} s without chaos (BENCH_FLEET_CHAOS=0: no kill, no handoff)`}, then a drain. ${os.cpus().length} cores; load average ${loadBefore.map((l) => l.toFixed(1)).join(' / ')} before, ${loadAfter.map((l) => l.toFixed(1)).join(' / ')} after.

| | |
|---|---|
| turns completed (each 2 model calls and 1 tool run) | ${completed} (${completedInChaos} during the chaos) |
| turns failed by the backends' kill (a write cut: \`failed\`, \`StorageError\`, final, never run again) | ${failedByKill.length} |
| turns/s | ${result.turnsPerSecond.toFixed(1)} |
| engines SIGKILLed / handed off | ${result.kills} / ${result.handoffs} |
| recovery after a kill, p50 / p99 (${recoveries.length} turns) | ${ms(result.recovery.p50)} / ${ms(result.recovery.p99)} |
| handoff pause, p50 / p99 (${pauses.length} turns) | ${ms(result.handoffPause.p50)} / ${ms(result.handoffPause.p99)} |
| PostgreSQL commits per turn (all transactions, reads included) | ${perTurn.toFixed(1)} |
| model calls made again (a step cut by a SIGKILL or the backends' kill) | ${extraCalls} of ${modelCalls} |
| calls in doubt after a kill, settled by the tool's \`reconcile\`: it had run / ran again; turns that waited in \`call-in-doubt\` | ${reconciled.ran} / ${reconciled.ranAgain}; ${inDoubt.length} |
| every turn ended exactly once (one final row; completed, or failed by the kill), no tool ran twice | ${problems.length === 0 ? 'yes' : `NO: ${problems.length} problems: ${problems.slice(0, 5).join('; ')}`} |

Model (2 cores, one PostgreSQL server shared with the engines): one-row write commits at ${commitRate.toFixed(0)}/s (8 connections) at ${perTurn.toFixed(1)} commits per turn ≈ ${modelTurns.toFixed(0)} turns/s for the server alone.
`)
if (problems.length) process.exitCode = 1
