// Turns on Restate against turnchart's own engines (issue 55, item 6): the same 10-step tool turn
// (workload 1's: 10 steps of 400 deltas, 9 tool calls of 1 KB) run by
//   - one engine process on a SQLite file,
//   - one engine process on PostgreSQL,
//   - turnchart's Restate service (`turnchart/restate`) on a SQLite file, behind a restate-server,
// each in a process of its own on Node 22 (bench/restate-worker.mjs; SQLite through node:sqlite),
// interleaved round by round, the model the bench's scripted server. Then each system's process
// is SIGKILLed in the middle of a turn's fifth step and a new one started at once: the recovery
// time is from the SIGKILL to the first row the new process writes on the turn, and to its end.
// Not a test: a measurement, printed as Markdown and kept in bench/results/restate-<time>.json.
//
//   npm run bench:restate
// Knobs: BENCH_RESTATE_ROUNDS (measured turns per system, default 10), BENCH_RESTATE_KILLS
// (SIGKILLs per system, 3), BENCH_LEASE_MS (the engines' lease, 5000: how long a killed
// engine's turn stays its own), BENCH_PG_URL (else TURNCHART_PG_URL, else the local server; a
// database bench_restate_<time> is created there and dropped after).
import { fork, spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { expectModelCalls, startServer, stats, stepReply, turnScript, W1_SCRIPT } from './lib.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '..')
const env = (name, fallback) => Number(process.env[name] ?? fallback)
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const ROUNDS = env('BENCH_RESTATE_ROUNDS', 10)
const WARMUP = 2
const KILLS = env('BENCH_RESTATE_KILLS', 3)
const LEASE_MS = env('BENCH_LEASE_MS', 5000)
const SCRIPT = W1_SCRIPT
const restateBin = path.join(root, `test/restate/node_modules/@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`)
const pgUrl = process.env.BENCH_PG_URL ?? process.env.TURNCHART_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

if (Number(process.versions.node.split('.')[0]) < 22) throw new Error('bench/restate.mjs runs on Node 22 (npm run bench:restate runs it with test/restate\'s)')
if (!fs.existsSync(restateBin)) throw new Error(`no restate-server at ${restateBin}: npm ci --prefix test/restate`)

const loadAtStart = os.loadavg()[0]
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-bench-restate-'))
const model = await startServer()
const pgDatabase = `bench_restate_${Date.now()}`
await adminQuery(`create database ${pgDatabase}`)
const systems = [
  engineSystem('engine, SQLite file', { file: path.join(dir, 'engine.db') }),
  engineSystem('engine, PostgreSQL', { url: withDatabase(pgUrl, pgDatabase) }),
  restateSystem('Restate, SQLite file', { file: path.join(dir, 'restate.db') }),
]
let lanes = 0
try {
  for (const system of systems) await system.start()
  const times = new Map(systems.map((s) => [s.name, []]))
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    for (const system of systems) {
      const ms = await timedTurn(system)
      if (round >= WARMUP) times.get(system.name).push(ms)
    }
  }
  const recoveries = new Map(systems.map((s) => [s.name, []]))
  for (let kill = 0; kill < KILLS; kill++) for (const system of systems) recoveries.get(system.name).push(await killedTurn(system))
  report(times, recoveries)
} finally {
  for (const system of systems) await system.stop().catch(() => undefined)
  model.close()
  await adminQuery(`drop database if exists ${pgDatabase} with (force)`).catch(() => undefined)
  fs.rmSync(dir, { recursive: true, force: true })
}

/** One measured turn: a new session and lane, the turn's script, its time; the lane must have had one call per step. */
async function timedTurn(system) {
  const lane = `r${++lanes}`
  await model.fill(lane, turnScript(SCRIPT))
  const started = performance.now()
  await system.turn(lane)
  const ms = performance.now() - started
  await expectModelCalls(model, { workload: 'restate', system: system.name, lane, expected: SCRIPT.steps, drop: true })
  return ms
}

/**
 * A turn whose fifth step hangs mid-stream; once its deltas flow, the system's process is
 * SIGKILLed and a new one started. Resolves with the times from the kill to the new process's
 * first row on the turn and to the turn's end (the fifth step asked again, 11 calls in all).
 */
async function killedTurn(system) {
  const lane = `k${++lanes}`
  const replies = turnScript(SCRIPT)
  replies.splice(4, 0, { ...stepReply({ deltas: SCRIPT.deltas, toolCall: true, n: 4 }), end: 'hang' })
  await model.fill(lane, replies)
  const turnId = await system.startTurn(lane)
  while ((await model.count(lane)).calls < 5) await delay(5)
  await delay(50)
  const { killedAt, worker } = await system.killAndRestart()
  const firstWrite = await worker.waitFor((m) => m.type === 'transition' && m.turnId === turnId)
  const end = await worker.waitFor((m) => m.type === 'transition' && m.turnId === turnId && m.to === 'completed')
  await expectModelCalls(model, { workload: 'restate recovery', system: system.name, lane, expected: SCRIPT.steps + 1, drop: true })
  return { firstWriteMs: firstWrite.at - killedAt, endMs: end.at - killedAt }
}

/** An engine in a worker process: prompts over IPC; a killed one replaced by a new engine on the same database, which recovers its turn once the lease ran out. */
function engineSystem(name, database) {
  let worker
  let seq = 0
  const start = async () => (worker = await startWorker(['engine', JSON.stringify(database), model.url]))
  const prompt = (lane) => {
    const id = ++seq
    worker.send({ id, sessionId: `ses_${lane}`, prompt: `lane:${lane} go` })
    return id
  }
  return {
    name,
    start,
    async turn(lane) {
      const id = prompt(lane)
      const done = await worker.waitFor((m) => m.type === 'done' && m.id === id)
      if (done.outcome !== 'completed') throw new Error(`${name}: turn ${done.outcome}`)
    },
    async startTurn(lane) {
      const id = prompt(lane)
      return (await worker.waitFor((m) => m.type === 'started' && m.id === id)).turnId
    },
    async killAndRestart() {
      await worker.kill()
      const killedAt = Date.now()
      return { killedAt, worker: await start() }
    },
    stop: () => worker?.kill() ?? Promise.resolve(),
  }
}

/** turnchart's Restate service in a worker process behind a restate-server; a killed one replaced on the same port, Restate retrying its invocation there. */
function restateSystem(name, database) {
  let server
  let worker
  let port
  const start = async () => (worker = await startWorker(['service', JSON.stringify(database), model.url, String(port)]))
  return {
    name,
    async start() {
      port = await freePort()
      server = await startRestateServer()
      await start()
      await server.post(`${server.admin}/deployments`, { uri: `http://127.0.0.1:${port}`, force: true })
    },
    async turn(lane) {
      const result = await server.post(`${server.ingress}/turnchart/ses_${lane}/prompt`, `lane:${lane} go`)
      if (result.outcome !== 'completed') throw new Error(`${name}: turn ${result.outcome}`)
    },
    async startTurn(lane) {
      const first = worker.messages.length
      await server.post(`${server.ingress}/turnchart/ses_${lane}/prompt/send`, `lane:${lane} go`)
      return (await worker.waitFor((m, i) => i >= first && m.type === 'transition')).turnId
    },
    async killAndRestart() {
      await worker.kill()
      const killedAt = Date.now()
      return { killedAt, worker: await start() }
    },
    async stop() {
      await worker?.kill()
      await server?.stop()
    },
  }
}

/** A worker process (bench/restate-worker.mjs) on this Node; every message kept, so a wait never misses one sent before it. */
async function startWorker(args) {
  const child = fork(path.join(here, 'restate-worker.mjs'), args, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, NODE_NO_WARNINGS: '1', RESTATE_LOGGING: 'ERROR', BENCH_LEASE_MS: String(LEASE_MS) },
  })
  const messages = []
  const waiters = new Set()
  child.on('message', (message) => {
    messages.push(message)
    for (const waiter of waiters) waiter()
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const waitFor = (matches, timeoutMs = 120_000) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const index = messages.findIndex(matches)
        if (index < 0) return
        waiters.delete(check)
        clearTimeout(timer)
        resolve(messages[index])
      }
      const timer = setTimeout(() => (waiters.delete(check), reject(new Error(`bench worker ${args[0]}: no such message in ${timeoutMs} ms`))), timeoutMs)
      waiters.add(check)
      check()
    })
  const worker = {
    messages,
    waitFor,
    send: (message) => child.send(message),
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited
    },
  }
  await Promise.race([waitFor((m) => m.type === 'ready'), exited.then(() => Promise.reject(new Error(`bench worker ${args[0]} exited before it was ready`)))])
  return worker
}

/** restate-server on free ports of 127.0.0.1 with a data directory of its own. */
async function startRestateServer() {
  const [ingressPort, adminPort, nodePort] = [await freePort(), await freePort(), await freePort()]
  const base = fs.mkdtempSync(path.join(dir, 'restate-'))
  const child = spawn(restateBin, ['--base-dir', base, '--bind-address', `127.0.0.1:${nodePort}`], {
    env: { ...process.env, RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`, RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`, RESTATE_LOG_FILTER: 'error' },
    stdio: 'ignore',
  })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const ingress = `http://127.0.0.1:${ingressPort}`
  const admin = `http://127.0.0.1:${adminPort}`
  for (const url of [`${admin}/health`, `${ingress}/restate/health`]) {
    while (!(await fetch(url).catch(() => undefined))?.ok) await delay(50)
  }
  return {
    ingress,
    admin,
    async post(url, body) {
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      const text = await response.text()
      if (!response.ok) throw new Error(`${url}: ${response.status} ${text}`)
      return text ? JSON.parse(text) : undefined
    },
    async stop() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

function report(times, recoveries) {
  const fmt = (ms) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1))
  const engine = stats(times.get(systems[0].name)).median
  const rows = systems.map((system) => {
    const turn = stats(times.get(system.name))
    const kills = recoveries.get(system.name)
    const first = stats(kills.map((k) => k.firstWriteMs))
    const end = stats(kills.map((k) => k.endMs))
    return { name: system.name, turn, perStepMs: turn.median / SCRIPT.steps, overEngine: turn.median / engine, first, end }
  })
  const load = `load average ${loadAtStart.toFixed(2)} at the start, ${os.loadavg()[0].toFixed(2)} at the end`
  const lines = [
    `Run ${new Date().toISOString()}, Node ${process.version}, ${os.cpus().length} cores, ${load}. ${ROUNDS} measured turns per system (after ${WARMUP} of warm-up), interleaved; ${KILLS} SIGKILLs per system; the engines' lease ${LEASE_MS} ms.`,
    '',
    '| system | turn, median (min–max) | per step | × one engine on a file | SIGKILL → first row of the new process, median (min–max) | SIGKILL → turn completed, median |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.name} | ${fmt(r.turn.median)} ms (${fmt(r.turn.min)}–${fmt(r.turn.max)}) | ${r.perStepMs.toFixed(2)} ms | ${r.overEngine.toFixed(2)}× | ${fmt(r.first.median)} ms (${fmt(r.first.min)}–${fmt(r.first.max)}) | ${fmt(r.end.median)} ms |`),
  ]
  console.log(lines.join('\n'))
  const at = new Date().toISOString()
  fs.mkdirSync(path.join(here, 'results'), { recursive: true })
  fs.writeFileSync(path.join(here, 'results', `restate-${at.replace(/[:.]/g, '-')}.json`), JSON.stringify({ at, node: process.version, loadAtStart, loadAtEnd: os.loadavg()[0], rounds: ROUNDS, kills: KILLS, leaseMs: LEASE_MS, script: SCRIPT, rows, times: Object.fromEntries(times), recoveries: Object.fromEntries(recoveries) }, null, 2))
}

async function adminQuery(sql) {
  const client = new pg.Client({ connectionString: pgUrl })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

function withDatabase(url, database) {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}
