// One engine process of the fleet run (bench/fleet.mjs): an engine on the fleet's PostgreSQL
// database that runs the prompts its parent sends, records each run of its tool, and on
// SIGTERM hands its turns over (`close({ handoff: true })`) and exits 0. SIGKILL is the crash.
//   node bench/fleet-worker.mjs <database URL> <model base URL>
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'

const here = path.dirname(fileURLToPath(import.meta.url))
const dist = process.env.TURNCHART_DIST ?? path.join(here, '../dist')
const { callInfo, configureTool, createEngine } = await import(pathToFileURL(path.join(dist, 'esm', 'index.mjs')).href)
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')
const { tool } = await import('ai')
const { z } = await import('zod')

process.on('uncaughtException', (error) => {
  console.error(`fleet worker ${process.pid}: uncaught ${error.stack}`)
  process.exit(70)
})
const [database, baseURL] = process.argv.slice(2)
const model = createOpenAICompatible({ name: 'fleet', baseURL, apiKey: 'k', includeUsage: true })('fleet-model')
// The tool's effect is a row of the app's own (`fleet_work`, made by the parent beside the
// engine's tables: in the URL's `schema` when it names one), one per execution key, its `runs`
// counting executions: what an app's API that dedupes by key keeps.
const appUrl = new URL(database)
const schema = appUrl.searchParams.get('schema')
appUrl.searchParams.delete('schema')
const work = schema ? `"${schema}".fleet_work` : 'fleet_work'
const app = new pg.Pool({ connectionString: appUrl.toString(), max: 4 })
app.on('error', () => undefined) // (a connection ended by the backends' kill: the pool drops it)
const tools = {
  work: configureTool(
    tool({
      description: 'Work once',
      inputSchema: z.object({ key: z.string() }),
      // Not idempotent (the default): recovery never runs a call that may have run without asking `reconcile`.
      execute: async ({ key }, options) => {
        const { idempotencyKey } = callInfo(options)
        await app.query(`insert into ${work} as w (idempotency_key, key, runs) values ($1, $2, 1) on conflict (idempotency_key) do update set runs = w.runs + 1`, [idempotencyKey, key])
        return `worked ${key}`
      },
    }),
    // A call in doubt (its engine died while it ran) settled as an app settles it: by its own record.
    {
      reconcile: async ({ key }, { idempotencyKey }) => {
        const { rows } = await app.query(`select 1 from ${work} where idempotency_key = $1`, [idempotencyKey])
        process.send?.({ type: 'reconciled', ran: rows.length > 0 })
        return rows.length > 0 ? { done: true, output: `worked ${key}` } : { done: false }
      },
    },
  ),
}
// Defaults but the recovery sweep (1 s, not the lease's 30 s): a SIGKILLed engine's turns are
// found by the sweep (its pid is gone); a handed-off turn is taken when its release is notified.
// (bench/handoff-pause.mjs sets a sweep of a minute: only the notification can bring a turn over.)
const intervalMs = Number(process.env.FLEET_RECOVERY_MS ?? 1000)
const engine = await createEngine({ database, model, tools, recovery: { intervalMs } })
process.on('message', (message) => {
  if (message.type !== 'prompt') return
  let turn
  try {
    turn = engine.prompt(message.sessionId, message.text)
  } catch (error) {
    return process.send?.({ type: 'refused', sessionId: message.sessionId, error: error?.name })
  }
  turn.done.catch((error) => {
    if (error?.name === 'SessionBusyError') process.send?.({ type: 'refused', sessionId: message.sessionId, error: error.name })
  })
})
process.once('SIGTERM', () => {
  const started = Date.now()
  engine.close({ handoff: true }).then(
    () => {
      process.send?.({ type: 'handed-off', ms: Date.now() - started })
      process.exit(0)
    },
    () => process.exit(1),
  )
})
process.send?.({ type: 'ready' })
