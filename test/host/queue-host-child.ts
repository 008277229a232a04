/**
 * An app on the test's host (queue-host.ts) in a child process the test can SIGKILL: its turns on
 * a SQLite file, its model the test's scripted server, its tools `charge` (needs approval) and
 * `send`, each effect a line in TURNCHART_SIDE_EFFECTS, and `nap` (a tool's `sleep()`). The test sends it
 * prompts, approvals and aborts over IPC; it tells each pause of each run (`pause`, its kind, and
 * the state of a wait or the outcome of an end), its deltas and the turns it lost (`lost`).
 * Usage: node queue-host-child.ts <db file> <journal file> <model baseURL>
 */
import fs from 'node:fs'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { sleep, type TurnchartEvent } from '../../src'
import { QueueHost } from './queue-host'

type Command = { type: 'prompt'; sessionId: string; input: string } | { type: 'approve'; sessionId: string; callId: string } | { type: 'abort'; sessionId: string; reason: string }

const tools = {
  charge: tool({
    description: 'Charge a card (not idempotent)',
    inputSchema: z.object({ amount: z.number() }),
    needsApproval: true,
    execute: async ({ amount }) => {
      fs.appendFileSync(process.env.TURNCHART_SIDE_EFFECTS!, `charged ${amount}\n`)
      return `charged ${amount}`
    },
  }),
  send: tool({
    description: 'Send a message (not idempotent)',
    inputSchema: z.object({ to: z.string() }),
    execute: async ({ to }) => {
      fs.appendFileSync(process.env.TURNCHART_SIDE_EFFECTS!, `sent to ${to}\n`)
      return `sent to ${to}`
    },
  }),
  nap: tool({ description: 'Rest a while', inputSchema: z.object({ ms: z.number() }), execute: async ({ ms }) => sleep({ ms }) }),
}

async function main() {
  const [file, journal, baseURL] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k' })('m')
  const onEvent = (event: TurnchartEvent) => {
    if (event.type === 'part.delta') process.send?.({ type: 'delta', turnId: event.turnId })
    if (event.type === 'turn.lost') process.send?.({ type: 'lost', turnId: event.turnId, error: event.error.name })
  }
  const host = await QueueHost.open({ database: file, model, tools, onEvent }, journal, (sessionId, turnId, pause) => {
    const told = pause.kind === 'ended' ? { outcome: pause.result.outcome, text: pause.result.text } : pause.kind === 'waiting' ? { to: pause.state, ...(pause.deadline !== undefined ? { deadline: pause.deadline } : {}) } : {}
    process.send?.({ type: 'pause', kind: pause.kind, sessionId, turnId, ...told })
  })
  process.on('message', (command: Command) => {
    const done = command.type === 'prompt' ? host.prompt(command.sessionId, command.input).then((turnId) => ({ turnId })) : command.type === 'approve' ? host.approve(command.sessionId, command.callId) : host.abort(command.sessionId, command.reason)
    void Promise.resolve(done).then(
      (answer) => process.send?.({ type: 'answered', to: command.type, ...(answer ?? {}) }),
      (error: Error) => process.send?.({ type: 'refused', error: `${error.name}: ${error.message}` }),
    )
  })
  process.send?.({ type: 'ready' })
}

void main()
