/**
 * Tools pinned per turn: a turn stores the fingerprint of the tools it may call (names and input
 * schema digests); a turn resumed by an engine whose tools changed (one removed, one's schema
 * changed) gets an error part naming the tool and the change for that call, and goes on.
 */
import Database from 'better-sqlite3'
import { jsonSchema, tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'
import { digestJson, fingerprintChanges, toolFingerprint } from '../../src/tools/tool-fingerprint'

let h: Harness | undefined
let next: Engine | undefined
afterEach(async () => {
  await next?.close()
  next = undefined
  await h?.close()
  h = undefined
})

let executions = 0
const deploy = (schema: z.ZodObject) =>
  tool({
    description: 'Deploy',
    inputSchema: schema,
    needsApproval: true,
    execute: async () => {
      executions++
      return 'deployed'
    },
  })
const read = tool({ description: 'Read', inputSchema: z.object({ path: z.string() }), execute: async () => 'text' })

test('a digest does not depend on key order; a fingerprint names each tool', async () => {
  expect(digestJson({ type: 'object', properties: { a: { type: 'string' } } })).toBe(digestJson({ properties: { a: { type: 'string' } }, type: 'object' }))
  const one = await toolFingerprint({ read, raw: tool({ inputSchema: jsonSchema({ type: 'object' }), execute: async () => 1 }) })
  expect(Object.keys(one)).toEqual(['read', 'raw'])
  expect(one.read).toMatch(/^[0-9a-f]{64}$/)
  const other = await toolFingerprint({ raw: tool({ inputSchema: jsonSchema({ type: 'object', properties: { x: { type: 'number' } } }), execute: async () => 1 }) })
  expect(fingerprintChanges(one, other)).toEqual([
    { tool: 'read', change: 'removed' },
    { tool: 'raw', change: 'schema-changed' },
  ])
})

test.each([
  ['removed', {}, /tool 'deploy' is no longer available \(removed\)/],
  ['schema-changed', { deploy: deploy(z.object({ env: z.string(), region: z.string() })) }, /tool 'deploy' changed after this turn started \(schema-changed\)/],
] as const)('a turn waiting for approval of a tool %s by the next engine: the call is an error part naming it, the turn completes', async (_change, nextTools, message) => {
  executions = 0
  h = await createHarness({ tools: { deploy: deploy(z.object({ env: z.string() })), read } })
  const session = await h.engine.createSession()
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_deploy' })
  h.server.text('I could not deploy.')
  const turn = h.engine.prompt(session.id, 'deploy')
  await h.waitForEvent((e) => e.type === 'approval.requested')
  const db = new Database(h.dbPath, { readonly: true })
  const row = db.prepare('select options from turnchart_turns where id = ?').get(turn.id) as { options: string }
  db.close()
  expect(Object.keys(JSON.parse(row.options).toolFingerprint).sort()).toEqual(['deploy', 'read'])
  await h.engine.close()
  await turn.done.catch(() => undefined)

  next = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { ...nextTools, read }, recovery: { onOpen: false } })
  // Parked by close(): the approve takes it.
  const completed = new Promise<void>((resolve) => next!.subscribe((event) => event.type === 'turn.transition' && event.turnId === turn.id && event.to === 'completed' && resolve()))
  await next.approve(turn.id, 'call_deploy')
  await completed
  expect(executions).toBe(0)
  const part = (await next.messages(session.id)).flatMap((m) => m.parts).find((p) => p.type === 'tool')
  expect(part).toMatchObject({ tool: 'deploy', state: { status: 'error', error: expect.stringMatching(message) } })
  // The model was told: the call's error is in the next request.
  expect(JSON.stringify(h.server.requests.at(-1)?.body)).toContain("tool 'deploy'")
})
