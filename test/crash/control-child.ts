/**
 * A child process that runs one turn whose tool needs approval, and reports over IPC: each
 * committed transition, each run of the tool, and the turn's outcome. Another engine (the
 * parent) approves, denies or aborts it.
 * Usage: node -r ts-node/register/transpile-only control-child.ts <database> <baseURL>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'

async function main() {
  const [database, baseURL] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({
    database,
    model,
    controlPollIntervalMs: 100,
    recovery: { onOpen: false, intervalMs: 0 },
    tools: {
      deploy: tool({
        description: 'Deploy',
        inputSchema: z.object({ env: z.string() }),
        needsApproval: true,
        execute: async ({ env }) => {
          process.send?.({ type: 'executed', env })
          return `deployed to ${env}`
        },
      }),
    },
  })
  engine.subscribe((event) => {
    if (event.type === 'turn.transition') process.send?.({ type: 'transition', to: event.to, turnId: event.turnId, sessionId: event.sessionId })
  })
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'deploy it')
  const result = await turn.done
  process.send?.({ type: 'done', outcome: result.outcome, error: result.error?.name }, () => void engine.close().then(() => process.exit(0)))
}

if (require.main === module) void main()
