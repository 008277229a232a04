/**
 * turnchart's Restate service as an app runs it, in a child process on Node 22: the virtual
 * object bound to the SDK's endpoint on 127.0.0.1:<port>, its turns on a SQLite file (Node's
 * built-in driver: better-sqlite3 in node_modules is built for the Node of the tests), its model
 * the test's scripted server. Its tools leave their side effects as lines in TURNCHART_SIDE_EFFECTS:
 * `charge` (needs approval) and `send`, neither idempotent, `nap` (a tool's `sleep()`), and
 * `errand`, a sub-agent (`agentTool`) that may charge; `send` hangs on its first run when
 * TURNCHART_HANG_IN_TOOL is set, so the test can kill the process inside it. The engine's events
 * the test waits on are sent over IPC (a turn this process lost to another's claim: `lost`).
 * Usage: node service-child.ts <db file> <model baseURL> <port>
 */
import fs from 'node:fs'
import http2 from 'node:http2'
import * as restate from '@restatedev/restate-sdk'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { agentTool, sleep } from '../../src'
import { createRestateService } from '../../src/restate'

const ledger = () => process.env.TURNCHART_SIDE_EFFECTS!
const send = (message: object) => process.send?.(message)

const tools = {
  charge: tool({
    description: 'Charge a card (not idempotent)',
    inputSchema: z.object({ amount: z.number() }),
    needsApproval: true,
    execute: async ({ amount }) => {
      fs.appendFileSync(ledger(), `charged ${amount}\n`)
      return `charged ${amount}`
    },
  }),
  send: tool({
    description: 'Send a message (not idempotent)',
    inputSchema: z.object({ to: z.string() }),
    execute: async ({ to }) => {
      const first = fs.readFileSync(ledger(), 'utf8') === ''
      fs.appendFileSync(ledger(), `sent to ${to}\n`)
      if (first && process.env.TURNCHART_HANG_IN_TOOL) {
        send({ type: 'in-tool' })
        await new Promise(() => undefined)
      }
      return `sent to ${to}`
    },
  }),
  nap: tool({
    description: 'Rest for a while (a durable sleep: the turn waits parked)',
    inputSchema: z.object({ ms: z.number() }),
    execute: async ({ ms }) => sleep({ ms }),
  }),
  // A sub-agent (run trees): its turn a child turn in a session of its own, which may charge.
  errand: agentTool({
    description: 'Do an errand',
    inputSchema: z.object({ task: z.string() }),
    tools: ['charge'],
    toPrompt: ({ task }) => task,
  }),
}

async function main() {
  const [file, baseURL, port] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const service = createRestateService({
    database: { file, driver: 'node:sqlite' },
    model,
    tools,
    onEvent(event) {
      if (event.type === 'part.delta') send({ type: 'delta', turnId: event.turnId, delta: event.delta })
      if (event.type === 'turn.transition') send({ type: 'transition', turnId: event.turnId, to: event.to })
      if (event.type === 'turn.lost') send({ type: 'lost', turnId: event.turnId, error: event.error.name })
    },
  })
  const server = http2.createServer(restate.createEndpointHandler({ services: [service] }))
  server.listen(Number(port), '127.0.0.1', () => send({ type: 'listening' }))
}

void main()
