/**
 * Run trees with a real engine (SQLite here; PostgreSQL in the postgres project): a parent →
 * child → grandchild turn through `agentTool`, each child's text its parent's tool output;
 * aborts that cascade; a budget over the tree; approvals of a child seen and answered from the
 * parent's session; child sessions hidden, deleted and counted with their parent.
 */
import { z } from 'zod'
import { agentTool, BudgetExceededError, MessageAbortedError, type ToolPart, type TurnchartEvent } from '../../src'
import { createHarness, type Harness } from '../support/harness'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const delegate = (name: string, tools: string[] = []) =>
  agentTool({
    description: `Ask the ${name} sub-agent`,
    inputSchema: z.object({ task: z.string() }),
    system: `You are the ${name}.`,
    tools,
    toPrompt: ({ task }) => task,
  })

async function toolPartsOf(sessionId: string): Promise<ToolPart[]> {
  return (await h.engine.messages(sessionId)).flatMap((m) => m.parts).filter((p): p is ToolPart => p.type === 'tool')
}

test('a parent → child → grandchild tree completes, each child text its tool output, linked by parentTurnId and call id', async () => {
  h = await createHarness({ tools: { researcher: delegate('researcher', ['fact']), fact: delegate('fact finder') } })
  // Requests in order: the parent calls the researcher, the researcher calls the fact finder, which answers; then back up.
  h.server.tool('researcher', { task: 'find the capital' }, { id: 'call_parent' })
  h.server.tool('fact', { task: 'capital of France' }, { id: 'call_child' })
  h.server.text('Paris', { usage: { input: 7, output: 3 } })
  h.server.text('The capital is Paris.')
  h.server.text('Done: Paris.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'what is the capital?')
  const result = await turn.done
  expect(result.outcome).toBe('completed')
  expect(result.text).toBe('Done: Paris.')

  const [child] = await h.engine.childTurns(turn.id)
  expect(child).toMatchObject({ parentTurnId: turn.id, parentCallId: 'call_parent', rootTurnId: turn.id, outcome: 'completed' })
  const [grandchild] = await h.engine.childTurns(child.id)
  expect(grandchild).toMatchObject({ parentTurnId: child.id, parentCallId: 'call_child', rootTurnId: turn.id, outcome: 'completed' })
  expect(await h.engine.childTurns(grandchild.id)).toEqual([])

  expect((await toolPartsOf(session.id))[0].state).toMatchObject({ status: 'completed', output: 'The capital is Paris.' })
  expect((await toolPartsOf(child.sessionId))[0].state).toMatchObject({ status: 'completed', output: 'Paris' })
  // The child's prompt is what toPrompt built; its system prompt the agent tool's.
  expect(h.server.requests[1].body.messages).toEqual([
    { role: 'system', content: 'You are the researcher.' },
    { role: 'user', content: 'find the capital' },
  ])
  expect(h.server.requests[1].body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['fact'])

  // Child sessions: hidden from listSessions unless asked for, each naming its parent.
  expect((await h.engine.listSessions()).map((s) => s.id)).toEqual([session.id])
  const all = await h.engine.listSessions({ children: true })
  expect(all.map((s) => s.id)).toEqual([session.id, child.sessionId, grandchild.sessionId])
  expect(all[1].parentSessionId).toBe(session.id)
  expect(all[2].parentSessionId).toBe(child.sessionId)

  // Usage: the session's own turn, its descendants, and both together, on done and engine.usage.
  const usage = await h.engine.usage(session.id)
  expect(usage.tokens).toMatchObject({ input: 20, output: 10 })
  expect(usage.descendants.tokens).toMatchObject({ input: 27, output: 13 })
  expect(usage.tree.tokens).toMatchObject({ input: 47, output: 23 })
  expect(usage.turns[0]).toMatchObject({ turnId: turn.id, descendants: usage.descendants, tree: usage.tree })
  expect(result.usage.descendants?.tokens).toMatchObject({ input: 27, output: 13 })
  expect(result.usage.tree?.tokens).toMatchObject({ input: 47, output: 23 })

  // Events of a child carry its turn id and its parent's.
  const childEvents = h.events.filter((e): e is TurnchartEvent & { parentTurnId: string } => e.parentTurnId !== undefined)
  expect(childEvents.some((e) => e.type === 'turn.transition' && e.turnId === child.id && e.parentTurnId === turn.id)).toBe(true)
  expect(childEvents.some((e) => e.type === 'part.delta' && e.turnId === grandchild.id && e.parentTurnId === child.id)).toBe(true)
  expect(h.events.filter((e) => e.type === 'turn.transition' && e.turnId === turn.id).every((e) => e.parentTurnId === undefined)).toBe(true)

  // Deleting the parent session deletes the tree's sessions.
  await h.engine.deleteSession(session.id)
  expect(await h.engine.listSessions({ children: true })).toEqual([])
  expect(await h.engine.getTurn(grandchild.id)).toBeUndefined()
})
