// An app on node:sqlite with better-sqlite3 not installed (run.mjs's node-sqlite test copies
// this folder's node_modules without it). `run <db> <baseURL>`: starts a turn whose tool never
// returns and says so on stdout (the test SIGKILLs it there); `recover <db> <baseURL>`: a new
// engine recovers the turn and prints its outcome and log; `memory - <baseURL>`: an engine with
// the default database (':memory:', which node:sqlite serves here) runs a turn.
import { createRequire } from 'node:module'
import { tool } from 'ai'
import { z } from 'zod'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine, idempotent } from 'turnchart'

const [mode, file, baseURL] = process.argv.slice(2)
const say = (message) => process.stdout.write(JSON.stringify(message) + '\n')

let installed = true
try {
  createRequire(import.meta.url).resolve('better-sqlite3')
} catch {
  installed = false
}
if (installed) throw new Error('better-sqlite3 is installed in this app: the test would prove nothing')

const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'test-key', includeUsage: true })('m')
const read = idempotent(
  tool({
    description: 'Read a file',
    inputSchema: z.object({ path: z.string() }),
    // The first run never returns (the process is killed in it); recovery runs it again.
    execute: async ({ path }) => (mode === 'run' ? (say({ type: 'tool-running' }), new Promise(() => {})) : `contents of ${path}`),
  }),
)
if (mode === 'memory') {
  const engine = await createEngine({ model })
  const session = await engine.createSession()
  const result = await engine.prompt(session.id, 'hi').done
  say({ type: 'memory', outcome: result.outcome, text: result.text })
  await engine.close()
  process.exit(0)
}
const engine = await createEngine({ database: { file, driver: 'node:sqlite' }, model, tools: { read }, recovery: { onOpen: false } })
if (mode === 'run') {
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'read a.txt')
  say({ type: 'started', sessionId: session.id, turnId: turn.id, dialect: 'node:sqlite' })
} else {
  const turns = await engine.recover()
  const results = await Promise.all(turns.map((t) => t.done))
  const log = turns.length ? (await engine.transitions(turns[0].id)).map((t) => t.to) : []
  const messages = turns.length ? await engine.messages(results[0].sessionId ?? (await engine.getTurn(turns[0].id)).sessionId) : []
  const toolPart = messages.flatMap((m) => m.parts).find((p) => p.type === 'tool')
  say({ type: 'recovered', turnIds: turns.map((t) => t.id), outcomes: results.map((r) => r.outcome), log, tool: toolPart?.state })
  await engine.close()
}
