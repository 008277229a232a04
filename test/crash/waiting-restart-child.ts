/**
 * A child process (an app) whose turn asks approval for a deploy, then SIGKILLs itself: `held`
 * as soon as the approval is asked (its engine still holds the turn), `parked` once the turn is
 * parked (`parkAfterMs: 0`: held by no engine).
 * Usage: node -r ts-node/register/transpile-only waiting-restart-child.ts <db> <baseURL> <held|parked>
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'

export const deployTool = () =>
  tool({ description: 'Deploy a service', inputSchema: z.object({ service: z.string() }), needsApproval: true, execute: async ({ service }) => `deployed ${service}` })

const die = () => process.kill(process.pid, 'SIGKILL')

async function main() {
  const [database, baseURL, point] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({ database, model, tools: { deploy: deployTool() }, parkAfterMs: point === 'parked' ? 0 : 600_000, recovery: { onOpen: false, intervalMs: 0 } })
  engine.subscribe((event) => {
    if (point === 'held' && event.type === 'approval.requested') die()
  })
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'deploy the api')
  // Parked: this handle lets go (TurnParkedError); the row names the parked owner.
  await turn.done.catch(() => undefined)
  die()
}

if (require.main === module) void main()
