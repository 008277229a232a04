/**
 * Tenants: a session's tenant is stored (read back, kept by a fork and by a run tree's child
 * sessions), and a tenant's usage is its sessions' run trees summed.
 */
import { z } from 'zod'
import { agentTool } from '../../src'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
afterEach(() => h?.close())

test("a tenant's sessions, forks and child sessions carry it; tenantUsage sums its sessions' trees", async () => {
  const tools = { helper: agentTool({ description: 'A helper', inputSchema: z.object({ task: z.string() }), toPrompt: ({ task }) => task }) }
  h = await createHarness({ tools })
  const a = await h.engine.createSession({ tenant: 'acme' })
  const b = await h.engine.createSession({ tenant: 'acme', title: 'second' })
  const other = await h.engine.createSession({ tenant: 'globex' })
  expect(a.tenant).toBe('acme')
  expect(await h.engine.getSession(b.id)).toMatchObject({ tenant: 'acme', title: 'second' })

  h.server.text('one', { usage: { input: 10, output: 5 } })
  await h.engine.prompt(a.id, 'hi').done
  // A run tree: the parent's two calls and its child's one all count for the tenant.
  h.server.tool('helper', { task: 'look' }, { usage: { input: 1, output: 1 } })
  h.server.text('looked', { usage: { input: 2, output: 2 } })
  h.server.text('two', { usage: { input: 3, output: 3 } })
  const parent = h.engine.prompt(b.id, 'delegate')
  expect((await parent.done).outcome).toBe('completed')
  const [child] = await h.engine.childTurns(parent.id)
  expect(await h.engine.getSession(child.sessionId)).toMatchObject({ tenant: 'acme', parentSessionId: b.id })
  h.server.text('other', { usage: { input: 100, output: 100 } })
  await h.engine.prompt(other.id, 'hi').done

  expect(await h.engine.tenantUsage('acme')).toMatchObject({ tenant: 'acme', sessions: 2, tokens: { input: 16, output: 11 } })
  expect(await h.engine.tenantUsage('globex')).toMatchObject({ sessions: 1, tokens: { input: 100, output: 100 } })
  expect(await h.engine.tenantUsage('nobody')).toMatchObject({ sessions: 0, tokens: { input: 0, output: 0 }, cost: 0 })

  const [first] = await h.engine.messages(a.id)
  expect(await h.engine.fork(a.id, first.info.id)).toMatchObject({ tenant: 'acme' })
  await expect(h.engine.createSession({ tenant: '' })).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'tenant' })
  await expect(h.engine.createSession({ tenant: 42 as never })).rejects.toMatchObject({ name: 'InvalidArgumentError' })
})
