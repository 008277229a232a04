// One process of bench/restate.mjs, on Node 22 (the Restate SDK needs it; SQLite through
// node:sqlite): either a turnchart engine taking prompts over IPC (`engine`), or turnchart's
// Restate service on a port (`service`). Both tell the bench each transition they write, so the
// bench sees when a process that replaced a killed one first wrote the killed one's turn.
//
//   node restate-worker.mjs engine <database JSON> <model URL>
//   node restate-worker.mjs service <database JSON> <model URL> <port>
// database JSON: { "file": "…" } or { "url": "postgres://…" }. BENCH_LEASE_MS: the engines' lease.
import http2 from 'node:http2'
import { aiSdkModel, aiSdkTools, turnchartEntry } from './systems.mjs'

const [mode, databaseJson, modelUrl, port] = process.argv.slice(2)
const spec = JSON.parse(databaseJson)
const database = spec.file ? { file: spec.file, driver: 'node:sqlite' } : spec.url
const options = {
  database,
  model: await aiSdkModel(modelUrl),
  tools: await aiSdkTools(),
  onEvent(event) {
    if (event.type === 'turn.transition') process.send({ type: 'transition', turnId: event.turnId, to: event.to, at: Date.now() })
  },
}

if (mode === 'engine') {
  const { createEngine } = await import(turnchartEntry('index.mjs'))
  const engine = await createEngine({ ...options, leaseMs: Number(process.env.BENCH_LEASE_MS ?? 30_000) })
  process.on('message', async ({ id, sessionId, prompt }) => {
    if (!(await engine.getSession(sessionId))) await engine.createSession({ id: sessionId })
    const turn = engine.prompt(sessionId, prompt)
    process.send({ type: 'started', id, turnId: turn.id })
    const result = await turn.done
    process.send({ type: 'done', id, turnId: turn.id, outcome: result.outcome })
  })
  process.send({ type: 'ready' })
} else {
  const restate = await import('@restatedev/restate-sdk')
  const { createRestateService } = await import(turnchartEntry('restate.mjs'))
  const server = http2.createServer(restate.createEndpointHandler({ services: [createRestateService({ name: 'turnchart', ...options })] }))
  server.listen(Number(port), '127.0.0.1', () => process.send({ type: 'ready' }))
}
