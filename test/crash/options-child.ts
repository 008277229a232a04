/**
 * A child process that runs one turn with per-prompt options (a registered model by name, a
 * system prompt, a tool subset, call settings, an image) and reports each committed
 * transition over IPC, so the parent can SIGKILL it mid-turn.
 * Usage: node -r ts-node/register/transpile-only options-child.ts <db> <baseURL>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, type EngineOptions } from '../../src'

/** The engine options parent and child share: two models on the same server, two tools. */
export function optionsEngine(baseURL: string): Pick<EngineOptions, 'model' | 'models' | 'tools'> {
  const provider = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })
  return {
    model: provider('default-model'),
    models: { fast: provider('fast-model') },
    tools: {
      read: tool({ description: 'Read a file', inputSchema: z.object({ path: z.string() }), execute: async ({ path }) => `contents of ${path}` }),
      write: tool({ description: 'Write a file', inputSchema: z.object({ path: z.string() }), execute: async () => 'written' }),
    },
  }
}

export const childPng = Buffer.from('89504e470d0a1a0a', 'hex')

async function main() {
  const [dbPath, baseURL] = process.argv.slice(2)
  const engine = await createEngine({ database: dbPath, ...optionsEngine(baseURL), flushIntervalMs: 10, recovery: { onOpen: false } })
  engine.subscribe((event) => {
    if (event.type === 'turn.transition') process.send?.({ type: 'transition', to: event.to, turnId: event.turnId })
  })
  const session = await engine.createSession()
  process.send?.({ type: 'session', sessionId: session.id })
  engine.prompt(
    session.id,
    [
      { type: 'text', text: 'look at this' },
      { type: 'image', image: childPng, mediaType: 'image/png' },
    ],
    { model: 'fast', system: 'child system', tools: ['read'], temperature: 0.3, seed: 7, maxSteps: 5 },
  )
}

if (require.main === module) void main()
