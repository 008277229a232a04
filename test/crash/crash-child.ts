/**
 * A child process that runs one turn against the scripted server and reports, over IPC, each
 * transition once it is committed, so the parent can SIGKILL it in a known state.
 * Usage: node -r ts-node/register/transpile-only crash-child.ts <db> <baseURL> <scenario>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'
import { idempotent } from '../../src/tools/tool-options'

export const childTools = {
  /** Never returns: the process dies while it runs. */
  deploy: tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), execute: () => new Promise<string>(() => {}) }),
  /** Idempotent: recovery runs it again. */
  read: idempotent(
    tool({ description: 'Read a file', inputSchema: z.object({ path: z.string() }), execute: async ({ path }) => (process.env.TURNCHART_CHILD ? new Promise<string>(() => {}) : `contents of ${path}`) }),
  ),
}

async function main() {
  const [dbPath, baseURL] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({
    database: dbPath,
    model,
    tools: childTools,
    flushIntervalMs: 10,
    retry: { jitter: 0 },
    recovery: { onOpen: false },
  })
  engine.subscribe((event) => {
    if (event.type === 'turn.transition') process.send?.({ type: 'transition', to: event.to, turnId: event.turnId })
    if (event.type === 'part.delta') process.send?.({ type: 'delta', delta: event.delta })
  })
  const session = await engine.createSession()
  process.send?.({ type: 'session', sessionId: session.id })
  engine.prompt(session.id, 'do the work')
}

if (require.main === module) void main()
