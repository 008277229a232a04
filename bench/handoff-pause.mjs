// The handoff pause between two engines (issue 39, item 1), measured alone: engine A (a
// bench/fleet-worker.mjs process) runs N turns; while each streams its first step, A is
// SIGTERMed (`close({ handoff: true })`); engine B (another one, its recovery sweep a minute
// apart, so only the release's notification can bring a turn over) takes them. Per turn:
// - pause: A's last row of the turn (its step gate's) to B's first (`turn.crashed` from `step-gate`);
// - release: A's gate row to the release's notification, as a listener of this process hears it;
// - take: that notification to B's first row.
// Not a test: a measurement, printed as a Markdown table (p50 / p99 per N).
//
//   npm run build && node bench/handoff-pause.mjs
// Knobs: BENCH_PG_URL (else TURNCHART_PG_URL, else postgres://postgres@127.0.0.1:5432/test; a
// schema `handoff_bench_<time>` is made there and dropped after), BENCH_HANDOFF_TURNS (the Ns,
// default 1,10,50), BENCH_HANDOFF_ROUNDS (rounds per N, default 3).
import { fork } from 'node:child_process'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'

const here = path.dirname(fileURLToPath(import.meta.url))
const dist = process.env.TURNCHART_DIST ?? path.join(here, '../dist')
const { createEngine } = await import(pathToFileURL(path.join(dist, 'esm', 'index.mjs')).href)
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')

const BASE = process.env.BENCH_PG_URL ?? process.env.TURNCHART_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const COUNTS = (process.env.BENCH_HANDOFF_TURNS ?? '1,10,50').split(',').map(Number)
const ROUNDS = Number(process.env.BENCH_HANDOFF_ROUNDS ?? 3)
// The first step streams long enough (2 s) for every turn to be in it when A is told to go.
const FIRST = { chunks: 40, ms: 50 }
const ANSWER = { chunks: 12, ms: 25 }

function pct(values, p) {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
}
const ms = (v) => (Number.isFinite(v) ? `${v.toFixed(v < 10 ? 1 : 0)} ms` : '–')
const until = async (check, what, timeoutMs = 120_000) => {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

// ---- the model: a tool call first, the answer once the tool's result is in the request (as bench/fleet.mjs's).
const modelServer = http.createServer((req, res) => {
  let body = ''
  req.on('data', (d) => (body += d))
  req.on('end', async () => {
    const request = JSON.parse(body)
    const lastUser = request.messages.map((m) => m.role).lastIndexOf('user')
    const answering = request.messages.slice(lastUser + 1).some((m) => m.role === 'tool')
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    const send = (choices, extra = {}) => res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices, ...extra })}\n\n`)
    let gone = false
    res.on('close', () => (gone = true))
    const { chunks, ms: every } = answering ? ANSWER : FIRST
    for (let i = 0; i < chunks && !gone; i++) {
      send([{ index: 0, delta: { ...(i === 0 ? { role: 'assistant' } : {}), content: `${answering ? 'a' : 'w'}${i} ` }, finish_reason: null }])
      await new Promise((r) => setTimeout(r, every))
    }
    if (gone) return
    if (!answering) send([{ index: 0, delta: { tool_calls: [{ index: 0, id: `call_${Math.random()}`, type: 'function', function: { name: 'work', arguments: JSON.stringify({ key: String(lastUser) }) } }] }, finish_reason: null }])
    send([{ index: 0, delta: {}, finish_reason: answering ? 'stop' : 'tool_calls' }])
    send([], { usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })
    res.end('data: [DONE]\n\n')
  })
})
await new Promise((r) => modelServer.listen(0, '127.0.0.1', r))
const modelUrl = `http://127.0.0.1:${modelServer.address().port}/v1`

function startWorker(database, recoveryMs) {
  return new Promise((resolve, reject) => {
    const child = fork(path.join(here, 'fleet-worker.mjs'), [database, modelUrl], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: { ...process.env, FLEET_RECOVERY_MS: String(recoveryMs) } })
    const worker = { child, exited: new Promise((r) => child.once('exit', r)) }
    child.on('message', (m) => {
      if (m.type === 'ready') resolve(worker)
    })
    child.once('exit', (code) => reject(new Error(`worker exited before ready (${code})`)))
  })
}

async function round(n) {
  const schema = `handoff_bench_${Date.now().toString(36)}`
  const url = new URL(BASE)
  url.searchParams.set('schema', schema)
  const database = url.toString()
  const setup = await createEngine({ database, model: createOpenAICompatible({ name: 'm', baseURL: modelUrl, apiKey: 'k' })('m'), recovery: { onOpen: false, intervalMs: 0 }, notifications: false })
  const sessions = []
  for (let i = 0; i < n; i++) sessions.push((await setup.createSession()).id)
  await setup.close()
  const db = new pg.Client({ connectionString: BASE })
  await db.connect()
  const t = (name) => `"${schema}".${name}`
  // The tool's record of its runs (bench/fleet-worker.mjs), beside the engine's tables.
  await db.query(`create table ${t('fleet_work')} (idempotency_key text primary key, key text not null, runs int not null)`)
  // This process hears the releases as the taking engine does.
  const released = new Map()
  const listener = new pg.Client({ connectionString: BASE })
  await listener.connect()
  listener.on('notification', (m) => m.payload?.startsWith('r:') && !released.has(m.payload.slice(2)) && released.set(m.payload.slice(2), Date.now()))
  await listener.query(`listen "turnchart_${schema}"`)

  const minute = 60_000
  const a = await startWorker(database, minute)
  const b = await startWorker(database, minute)
  for (const sessionId of sessions) a.child.send({ type: 'prompt', sessionId, text: `go ${sessionId}` })
  // Each turn streaming its first step in A.
  await until(async () => (await db.query(`select count(*)::int as n from ${t('turnchart_turns')} where state = 'streaming' and step = 1`)).rows[0].n === n, 'the turns to stream')
  a.child.kill('SIGTERM')
  await until(async () => (await db.query(`select count(*)::int as n from ${t('turnchart_turns')} where outcome is not null`)).rows[0].n === n, 'the turns to end')
  await a.exited
  const { rows } = await db.query(`select turn_id, seq, from_state, event_type, to_state, at::bigint as at from ${t('turnchart_transitions')} order by turn_id, seq`)
  const { rows: outcomes } = await db.query(`select outcome, count(*)::int as n from ${t('turnchart_turns')} group by outcome`)
  const byTurn = new Map()
  for (const r of rows) byTurn.set(r.turn_id, [...(byTurn.get(r.turn_id) ?? []), { ...r, at: Number(r.at) }])
  const result = { pauses: [], release: [], take: [], notTaken: 0 }
  for (const [turnId, log] of byTurn) {
    const i = log.findIndex((r, k) => k > 0 && r.event_type === 'turn.crashed' && r.from_state === 'step-gate' && log[k - 1].to_state === 'step-gate')
    if (i < 0) {
      result.notTaken++
      continue
    }
    result.pauses.push(log[i].at - log[i - 1].at)
    const heard = released.get(turnId)
    if (heard !== undefined) (result.release.push(heard - log[i - 1].at), result.take.push(log[i].at - heard))
  }
  result.outcomes = Object.fromEntries(outcomes.map((o) => [o.outcome ?? 'open', o.n]))
  result.toolRuns = (await db.query(`select coalesce(sum(runs), 0)::int as n from ${t('fleet_work')}`)).rows[0].n
  b.child.kill('SIGKILL')
  await b.exited
  await listener.end()
  await db.query(`drop schema "${schema}" cascade`)
  await db.end()
  return result
}

const loadBefore = os.loadavg()
const lines = []
for (const n of COUNTS) {
  const all = { pauses: [], release: [], take: [], notTaken: 0, problems: [] }
  for (let r = 0; r < ROUNDS; r++) {
    const result = await round(n)
    all.pauses.push(...result.pauses)
    all.release.push(...result.release)
    all.take.push(...result.take)
    all.notTaken += result.notTaken
    if (result.outcomes.completed !== n) all.problems.push(`outcomes ${JSON.stringify(result.outcomes)}`)
    if (result.toolRuns !== n) all.problems.push(`${result.toolRuns} tool runs for ${n} turns`)
  }
  lines.push(
    `| ${n} | ${all.pauses.length} | ${ms(pct(all.pauses, 50))} / ${ms(pct(all.pauses, 99))} | ${ms(pct(all.release, 50))} / ${ms(pct(all.release, 99))} | ${ms(pct(all.take, 50))} / ${ms(pct(all.take, 99))} | ${all.notTaken} | ${all.problems.join('; ') || 'none'} |`,
  )
}
const loadAfter = os.loadavg()
modelServer.close()
console.log(`## Handoff pause, two engines (PostgreSQL)

Engine A runs N turns (each: a streamed step with a tool call, then the answer); while each streams its first step A is SIGTERMed (\`close({ handoff: true })\`); engine B, its recovery sweep a minute apart, takes each on the release's notification. ${ROUNDS} rounds per N. ${os.cpus().length} cores; load average ${loadBefore.map((l) => l.toFixed(1)).join(' / ')} before, ${loadAfter.map((l) => l.toFixed(1)).join(' / ')} after.

| N turns | handed over | pause p50 / p99 | A's gate row → release heard, p50 / p99 | release heard → B's first row, p50 / p99 | taken otherwise | problems |
|---|---|---|---|---|---|---|
${lines.join('\n')}
`)
