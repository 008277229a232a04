/**
 * A child process whose turn asks approval for a non-idempotent tool, approves it itself, and
 * SIGKILLs itself at one point between the approval and the tool's side effect:
 * `same-tick` (in the tick of `approve`), `committed` (the row entering tool-running is
 * committed), `in-tool` (the side effect is done, the tool has not returned), `returned` (the
 * tool returned, its result not yet written), `stored` (its result is written: the next step's row committed).
 * The side effect is a line appended to the file in TURNCHART_SIDE_EFFECTS.
 * Usage: node -r ts-node/register/transpile-only approval-kill-child.ts <db> <baseURL> <point>
 */
import fs from 'node:fs'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { z } from 'zod'
import { configureTool, createEngine } from '../../src'

/** The ledger, as a `reconcile` hook reads it: did the charge happen? (one line per charge) */
export function chargedInLedger(): boolean {
  return fs.readFileSync(process.env.TURNCHART_SIDE_EFFECTS!, 'utf8').split('\n').filter(Boolean).length > 0
}

/** The charge tool with a `reconcile` that reads the ledger: done (with its output) when charged, else not done (run it again). */
export function reconcilingChargeTool() {
  return configureTool(chargeTool(), { reconcile: (input) => (chargedInLedger() ? { done: true, output: `charged ${(input as { amount: number }).amount} (reconciled)` } : { done: false }) })
}

export function chargeTool(onCharged?: () => void) {
  return tool({
    description: 'Charge a card (not idempotent)',
    inputSchema: z.object({ amount: z.number() }),
    needsApproval: true,
    execute: async ({ amount }) => {
      fs.appendFileSync(process.env.TURNCHART_SIDE_EFFECTS!, `charged ${amount}\n`)
      onCharged?.()
      return `charged ${amount}`
    },
  })
}

const die = () => process.kill(process.pid, 'SIGKILL')

async function main() {
  const [database, baseURL, point] = process.argv.slice(2)
  const model = createOpenAICompatible({ name: 'scripted', baseURL, apiKey: 'k', includeUsage: true })('m')
  const engine = await createEngine({
    database,
    model,
    flushIntervalMs: 10_000,
    recovery: { onOpen: false, intervalMs: 0 },
    tools: { charge: chargeTool(point === 'in-tool' ? die : undefined) },
  })
  engine.subscribe((event) => {
    if (event.type === 'approval.requested') {
      void engine.approve(event.turnId, event.calls[0].callId)
      if (point === 'same-tick') die()
    }
    if (point === 'committed' && event.type === 'turn.transition' && event.to === 'tool-running') die()
    if (point === 'stored' && event.type === 'turn.transition' && event.to === 'streaming' && event.seq > 3) die()
    if (point === 'returned' && event.type === 'part.updated' && event.part.type === 'tool' && event.part.state.status === 'completed') die()
  })
  const session = await engine.createSession()
  process.send?.({ type: 'session', sessionId: session.id })
  engine.prompt(session.id, 'charge 5')
}

if (require.main === module) void main()
