/**
 * An engine process for the handoff test: runs the prompts its parent sends (its tool `work`
 * reports each run), reports each transition of its turns, and on SIGTERM hands its turns over
 * (`close({ handoff: true })`) and exits 0. It also serves the chat handler on 127.0.0.1 (the
 * port sent with `ready`) so the test can stream a turn from it as a browser would.
 * Usage: node -r ts-node/register/transpile-only handoff-child.ts <database URL> <baseURL>
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createChatHandler, createEngine, toNodeListener } from '../../src'

async function main() {
  const [database, baseURL] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const tools = {
    work: tool({
      description: 'Work',
      inputSchema: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        process.send?.({ type: 'tool-ran', pid: process.pid, n })
        return `worked ${n}`
      },
    }),
  }
  // A lease far above the test's wait: the taking engine must take the turn at once, never by its lease running out.
  const engine = await createEngine({ database, model, tools, leaseMs: 60_000, recovery: { intervalMs: 60_000 }, flushIntervalMs: 20 })
  const handler = createChatHandler(engine, { pollIntervalMs: 60_000 })
  const server = http.createServer(toNodeListener(handler))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  engine.subscribe((event) => {
    if (event.type === 'turn.transition') process.send?.({ type: 'transition', turnId: event.turnId, sessionId: event.sessionId, to: event.to, pid: process.pid })
  })
  process.on('message', (message: { type: string; sessionId: string; text: string }) => {
    if (message.type !== 'prompt') return
    const turn = engine.prompt(message.sessionId, message.text)
    process.send?.({ type: 'started', sessionId: message.sessionId, turnId: turn.id })
    turn.done.then(
      (result) => process.send?.({ type: 'done', turnId: turn.id, outcome: result.outcome }),
      (error: { name?: string }) => process.send?.({ type: 'done', turnId: turn.id, error: error?.name }),
    )
  })
  process.once('SIGTERM', () => {
    void engine.close({ handoff: true }).then(
      () => server.close(() => process.exit(0)),
      () => process.exit(1),
    )
  })
  process.send?.({ type: 'ready', port: (server.address() as AddressInfo).port })
}

void main()
