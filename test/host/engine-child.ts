/**
 * turnchart's own engine in a child process the test can pause or SIGKILL: its turns on a SQLite
 * file held with leases of `leaseMs`, its recovery sweep every `sweepMs`, its model the test's
 * scripted server, its tool `send` (not idempotent; each send a line in TURNCHART_SIDE_EFFECTS).
 * It prompts what the test sends it over IPC (`{ type: 'prompt', sessionId, input }`) and tells
 * its deltas and the turns it lost (`lost`).
 * Usage: node engine-child.ts <db file> <model baseURL> <leaseMs> <sweepMs>
 */
import fs from 'node:fs'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'

const send = tool({
  description: 'Send a message (not idempotent)',
  inputSchema: z.object({ to: z.string() }),
  execute: async ({ to }) => {
    fs.appendFileSync(process.env.TURNCHART_SIDE_EFFECTS!, `sent to ${to}\n`)
    return `sent to ${to}`
  },
})

async function main() {
  const [database, baseURL, leaseMs, sweepMs] = process.argv.slice(2)
  const engine = await createEngine({
    database,
    model: createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k' })('m'),
    tools: { send },
    leaseMs: Number(leaseMs),
    recovery: { intervalMs: Number(sweepMs) },
    onEvent(event) {
      if (event.type === 'part.delta') process.send?.({ type: 'delta', turnId: event.turnId })
      if (event.type === 'turn.lost') process.send?.({ type: 'lost', turnId: event.turnId, error: event.error.name })
    },
  })
  process.on('message', async (command: { type: 'prompt'; sessionId: string; input: string }) => {
    if (!(await engine.getSession(command.sessionId))) await engine.createSession({ id: command.sessionId })
    engine.prompt(command.sessionId, command.input).done.catch(() => undefined)
  })
  process.send?.({ type: 'ready' })
}

void main()
