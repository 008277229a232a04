// Control latency across engines on PostgreSQL (issue 29): the time from `engine.approve` called
// on one engine to the start of the approved tool in the engine that runs the turn, another
// process. Measured with polling only (`notifications: false`: the control poll, every
// `controlPollIntervalMs`, 200 ms by default) and with LISTEN/NOTIFY (the default on a
// postgres:// URL), interleaved try by try on the same machine and database.
//
// Both instants are read with process.hrtime (CLOCK_MONOTONIC, one clock for every process on
// the machine): the approver's just before it calls `approve`, the owner's when the tool's
// `execute` begins. Before each approval the approver waits a random 0-250 ms, so that the
// approvals do not fall in step with the owner's poll.
//
//   controlLatency({ url, tries, log }) -> { tries, poll: Stats, push: Stats } | { skipped }
//     Stats: { n, median, min, max, p99, mean, samples } in ms (lib.mjs `stats`).
//   controlLatencyTargets(result) -> [{ target, measured, met }] (run.mjs's TargetResult)
//   renderControlLatency(result) -> a Markdown section
//
// Standalone (after `npm run build`): node bench/control-latency.mjs
// Knobs: BENCH_PG_URL (else TURNCHART_PG_URL, else postgres://postgres@127.0.0.1:5432/test; a
// schema per mode is created and dropped there), BENCH_CONTROL_TRIES (default 12, at least 8).
import { fork } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { stats, fmtMs } from './lib.mjs'

const here = fileURLToPath(import.meta.url)
const dist = () => process.env.TURNCHART_DIST ?? path.join(path.dirname(here), '../dist')
const entry = (file) => import(pathToFileURL(path.join(dist(), 'esm', file)).href)
const DEFAULT_URL = process.env.BENCH_PG_URL ?? process.env.TURNCHART_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const MODES = ['poll', 'push']
const TARGET_MS = 50

/** `base` with `?schema=` (turnchart's URL parameter) set. */
function withSchema(base, schema) {
  const url = new URL(base)
  url.searchParams.set('schema', schema)
  return url.toString()
}

/** The URL without its password, for messages. */
function redact(value) {
  const url = new URL(value)
  if (url.password) url.password = '***'
  return url.toString()
}

async function withClient(url, fn) {
  const { default: pg } = await import('pg')
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** A child process running the owner engine of `mode`; resolves once it listens for commands. */
function startOwner(database, mode) {
  const child = fork(here, ['--owner', database, mode], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: process.env })
  const waiting = []
  child.on('message', (message) => {
    const index = waiting.findIndex((w) => w.type === message.type)
    if (index >= 0) waiting.splice(index, 1)[0].resolve(message)
  })
  child.on('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`the ${mode} owner exited (${code}) while the bench waited for ${w.type}`))
  })
  const next = (type) => new Promise((resolve, reject) => waiting.push({ type, resolve, reject }))
  return { child, next, ready: next('ready') }
}

/**
 * @param {{ url?: string, tries?: number, log?: (...args: unknown[]) => void }} options
 */
export async function controlLatency({ url = DEFAULT_URL, tries = Number(process.env.BENCH_CONTROL_TRIES ?? 12), log = () => {} } = {}) {
  try {
    await withClient(url, (c) => c.query('select 1'))
  } catch (error) {
    return { skipped: `PostgreSQL at ${redact(url)} did not answer (${String(error?.message ?? error).split('\n')[0]})` }
  }
  if (!(tries >= 8)) throw new Error(`control latency: ${tries} tries; at least 8`)
  const { createEngine } = await entry('index.mjs')
  const { startScriptedServer } = await entry('testing.mjs')
  const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')
  const schemas = Object.fromEntries(MODES.map((mode) => [mode, `bench_control_${process.pid}_${mode}`]))
  const dropSchemas = () => withClient(url, async (c) => Promise.all(Object.values(schemas).map((s) => c.query(`drop schema if exists ${s} cascade`))))
  await dropSchemas()
  // The approvers' engines make no model call; a model is required all the same.
  const idle = await startScriptedServer()
  const model = createOpenAICompatible({ name: 'bench', baseURL: idle.url, apiKey: 'bench' })('scripted')
  const sides = {}
  try {
    for (const mode of MODES) {
      const database = withSchema(url, schemas[mode])
      const owner = startOwner(database, mode)
      await owner.ready
      // The approver: another engine on the database, in this process; it runs no turn.
      const approver = await createEngine({ database, model, notifications: mode === 'push', recovery: { onOpen: false, intervalMs: 0 } })
      sides[mode] = { owner, approver, samples: [] }
    }
    for (let round = 0; round < tries + 1; round++) {
      for (const mode of MODES) {
        const { owner, approver, samples } = sides[mode]
        const waiting = owner.next('waiting')
        owner.child.send({ type: 'turn' })
        const { turnId, callId } = await waiting
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 250))
        const started = owner.next('started')
        const done = owner.next('done')
        const t0 = process.hrtime.bigint()
        await approver.approve(turnId, callId)
        const { at } = await started
        const { outcome } = await done
        if (outcome !== 'completed') throw new Error(`control latency (${mode}): the turn ended ${outcome}`)
        // Round 0 warms both sides up (connections, compiled queries) and is not counted.
        if (round > 0) samples.push(Number(BigInt(at) - t0) / 1e6)
      }
      if (round > 0) log(`control latency try ${round}/${tries}: poll ${fmtMs(sides.poll.samples.at(-1))} ms, push ${fmtMs(sides.push.samples.at(-1))} ms`)
    }
  } finally {
    for (const side of Object.values(sides)) {
      await side.approver.close()
      side.owner.child.send({ type: 'close' })
      await new Promise((resolve) => (side.owner.child.exitCode === null ? side.owner.child.once('exit', resolve) : resolve()))
    }
    await idle.close()
    await dropSchemas()
  }
  const result = { tries, url: redact(url) }
  for (const mode of MODES) result[mode] = { ...stats(sides[mode].samples), samples: sides[mode].samples }
  return result
}

/** run.mjs's TargetResult list: the push median against the target, the poll's for reference. */
export function controlLatencyTargets(result) {
  if (!result || result.skipped) return [{ target: `cross-engine approval on PostgreSQL < ${TARGET_MS} ms (median)`, measured: result?.skipped ?? 'not run', met: null }]
  return [
    { target: `cross-engine approval on PostgreSQL < ${TARGET_MS} ms (median, LISTEN/NOTIFY)`, measured: `${fmtMs(result.push.median)} ms (${fmtMs(result.push.min)}–${fmtMs(result.push.max)}, ${result.push.n} tries)`, met: result.push.median < TARGET_MS, value: result.push.median, limit: { below: TARGET_MS }, unit: 'ms' },
    { target: 'the same, polling only (notifications: false, poll every 200 ms)', measured: `${fmtMs(result.poll.median)} ms (${fmtMs(result.poll.min)}–${fmtMs(result.poll.max)}, ${result.poll.n} tries)`, met: null },
  ]
}

export function renderControlLatency(result) {
  if (!result) return ''
  const lines = ['## Control latency across engines on PostgreSQL', '']
  if (result.skipped) return [...lines, `Skipped: ${result.skipped}.`, ''].join('\n')
  lines.push(
    'From `engine.approve` on one engine to the start of the approved tool in the engine that runs the turn (another',
    `process), ${result.tries} tries each after a warm-up, interleaved; bench/control-latency.mjs.`,
    '',
    '| | median | min | max |',
    '|---|---|---|---|',
    `| polling only (\`notifications: false\`, \`controlPollIntervalMs\` 200) | ${fmtMs(result.poll.median)} ms | ${fmtMs(result.poll.min)} ms | ${fmtMs(result.poll.max)} ms |`,
    `| LISTEN/NOTIFY (default on a postgres:// URL) | ${fmtMs(result.push.median)} ms | ${fmtMs(result.push.min)} ms | ${fmtMs(result.push.max)} ms |`,
    '',
  )
  return lines.join('\n')
}

/** The owner: runs one turn per `turn` command, each waiting for approval of `deploy`; reports its start. */
async function owner(database, mode) {
  const { createEngine } = await entry('index.mjs')
  const { startScriptedServer } = await entry('testing.mjs')
  const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')
  const { tool } = await import('ai')
  const { z } = await import('zod')
  const server = await startScriptedServer()
  const engine = await createEngine({
    database,
    model: createOpenAICompatible({ name: 'bench', baseURL: server.url, apiKey: 'bench', includeUsage: true })('scripted'),
    notifications: mode === 'push',
    recovery: { onOpen: false, intervalMs: 0 },
    tools: {
      deploy: tool({
        description: 'Deploy',
        inputSchema: z.object({ env: z.string() }),
        needsApproval: true,
        execute: async ({ env }) => {
          process.send({ type: 'started', at: String(process.hrtime.bigint()) })
          return `deployed to ${env}`
        },
      }),
    },
  })
  const session = await engine.createSession()
  engine.subscribe((event) => {
    if (event.type === 'approval.requested') process.send({ type: 'waiting', turnId: event.turnId, callId: event.calls[0].callId })
  })
  process.on('message', async (message) => {
    if (message.type === 'turn') {
      server.tool('deploy', { env: 'prod' })
      server.text('deployed')
      const result = await engine.prompt(session.id, 'deploy it').done
      process.send({ type: 'done', outcome: result.outcome })
    } else if (message.type === 'close') {
      await engine.close()
      await server.close()
      process.exit(0)
    }
  })
  process.send({ type: 'ready' })
}

if (process.argv[2] === '--owner') {
  await owner(process.argv[3], process.argv[4])
} else if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await controlLatency({ log: (...args) => console.error(...args) })
  if (result.skipped) console.log(`control latency: skipped (${result.skipped})`)
  else {
    console.log(renderControlLatency(result))
    for (const t of controlLatencyTargets(result)) console.log(`${t.met === null ? '·' : t.met ? '✓' : '✗'} ${t.target}: ${t.measured}`)
  }
}
