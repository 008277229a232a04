/**
 * Upgrades with turns in flight: two turns wait for approvals when their engine closes; the next
 * version's engine removes one tool and changes another's schema. `upgradeCheck()` names each
 * turn and tool it breaks; resumed there, the call of the removed tool is refused with an error
 * part naming the tool and the change (the turn goes on and completes), the other call still
 * waits and runs once approved.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
let next: Engine | undefined
afterEach(async () => {
  await next?.close()
  next = undefined
  await h?.close()
})

const ran: string[] = []
const execute = (name: string) => async () => {
  ran.push(name)
  return `${name} done`
}
const v1 = {
  deploy: tool({ description: 'Deploys', inputSchema: z.object({ target: z.string() }), needsApproval: true, execute: execute('deploy') }),
  keep: tool({ description: 'Stays as it is', inputSchema: z.object({ note: z.string() }), needsApproval: true, execute: execute('keep') }),
  read: tool({ description: 'Reads a file', inputSchema: z.object({ path: z.string() }), execute: execute('read') }),
}
// The next version: `deploy` is gone, `read` takes a new required field, `keep` is unchanged.
const v2 = {
  keep: v1.keep,
  read: tool({ description: 'Reads a file', inputSchema: z.object({ path: z.string(), encoding: z.string() }), execute: execute('read') }),
}

test('upgradeCheck names the turns a removed tool and a changed schema break; a resumed turn gets the named error part', async () => {
  h = await createHarness({ tools: v1 })
  const a = await h.engine.createSession()
  const b = await h.engine.createSession()
  h.server.tool('deploy', { target: 'prod' }, { id: 'call_deploy' })
  const first = h.engine.prompt(a.id, 'deploy it')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === first.id && e.to === 'awaiting-approval')
  h.server.tool('keep', { note: 'n' }, { id: 'call_keep' })
  const second = h.engine.prompt(b.id, 'keep it')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === second.id && e.to === 'awaiting-approval')
  const stored = (await h.engine.getTurn(first.id))?.options
  expect(Object.keys(stored?.toolFingerprint ?? {})).toEqual(['deploy', 'keep', 'read'])
  expect(stored?.toolFingerprint?.read).toMatch(/^[0-9a-f]{64}$/)
  expect(stored?.modelId).toEqual(expect.any(String))
  await h.engine.close()
  await expect(first.done).rejects.toMatchObject({ name: 'TurnParkedError' })

  // The same configuration breaks nothing.
  const same = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: v1, recovery: { onOpen: false } })
  expect(await same.upgradeCheck()).toEqual([])
  await same.close()

  next = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: v2, recovery: { onOpen: false } })
  const breaks = await next.upgradeCheck()
  expect(breaks).toEqual([
    { turnId: first.id, sessionId: a.id, state: 'awaiting-approval', tool: 'deploy', change: 'pending-approval-of-removed', callId: 'call_deploy' },
    { turnId: first.id, sessionId: a.id, state: 'awaiting-approval', tool: 'read', change: 'schema-changed' },
    { turnId: second.id, sessionId: b.id, state: 'awaiting-approval', tool: 'deploy', change: 'removed' },
    { turnId: second.id, sessionId: b.id, state: 'awaiting-approval', tool: 'read', change: 'schema-changed' },
  ])

  h.server.text('deploy was not possible')
  // Parked by close(): taken by the approve. Approved, the call of the removed tool is not run:
  // an error part names the tool and the change.
  const completed = new Promise<void>((resolve) => next!.subscribe((event) => event.type === 'turn.transition' && event.turnId === first.id && event.to === 'completed' && resolve()))
  await next.approve(first.id, 'call_deploy')
  await completed
  const refused = (await next.messages(a.id)).flatMap((m) => m.parts).find((p) => p.type === 'tool')
  expect(refused).toMatchObject({
    tool: 'deploy',
    state: { status: 'error', error: expect.stringContaining("tool 'deploy' is no longer available (removed)") },
  })
  // The model was told, in the tool's result.
  expect(JSON.stringify(h.server.requests.at(-1))).toContain("tool 'deploy' is no longer available (removed)")

  h.server.text('kept')
  const secondCompleted = new Promise<void>((resolve) => next!.subscribe((event) => event.type === 'turn.transition' && event.turnId === second.id && event.to === 'completed' && resolve()))
  await next.approve(second.id, 'call_keep')
  await secondCompleted
  expect(ran).toEqual(['keep'])
})
