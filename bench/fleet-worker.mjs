// One engine process of the fleet run (bench/fleet.mjs): an engine on the fleet's PostgreSQL
// database that runs the prompts its parent sends, reports each run of its tool, and on
// SIGTERM hands its turns over (`close({ handoff: true })`) and exits 0. SIGKILL is the crash.
//   node bench/fleet-worker.mjs <database URL> <model base URL>
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const dist = process.env.TURNCHART_DIST ?? path.join(here, '../dist')
const { createEngine } = await import(pathToFileURL(path.join(dist, 'esm', 'index.mjs')).href)
const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible')
const { tool } = await import('ai')
const { z } = await import('zod')

process.on('uncaughtException', (error) => {
  console.error(`fleet worker ${process.pid}: uncaught ${error.stack}`)
  process.exit(70)
})
const [database, baseURL] = process.argv.slice(2)
const model = createOpenAICompatible({ name: 'fleet', baseURL, apiKey: 'k', includeUsage: true })('fleet-model')
const tools = {
  work: tool({
    description: 'Work once',
    inputSchema: z.object({ key: z.string() }),
    // Not idempotent (the default): recovery never runs a call that may have run.
    execute: async ({ key }) => {
      process.send?.({ type: 'tool-ran', key })
      return `worked ${key}`
    },
  }),
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
