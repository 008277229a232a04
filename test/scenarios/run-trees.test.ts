/**
 * Run trees with a real engine (SQLite here; PostgreSQL in the postgres project): a parent →
 * child → grandchild turn through `agentTool`, each child's text its parent's tool output;
 * aborts that cascade; a budget over the tree; approvals of a child seen and answered from the
 * parent's session; child sessions hidden, deleted and counted with their parent.
 */
import { z } from 'zod'
import { agentTool, BudgetExceededError, createEngine, MessageAbortedError, type Engine, type ToolPart, type TurnchartEvent } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'

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

/** Parent → child → grandchild, the grandchild streaming and never finishing. */
async function treeWithStreamingGrandchild(options: Parameters<typeof createHarness>[0] = {}) {
  h = await createHarness({ tools: { researcher: delegate('researcher', ['fact']), fact: delegate('fact finder') }, ...(options as object) })
  h.server.tool('researcher', { task: 'find the capital' }, { id: 'call_parent' })
  h.server.tool('fact', { task: 'capital of France' }, { id: 'call_child' })
  h.server.push({ type: 'stream', chunks: [{ text: 'Par' }], end: 'hang' })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'what is the capital?')
  const delta = (await h.waitForEvent((e) => e.type === 'part.delta' && e.parentTurnId !== undefined && e.delta === 'Par')) as TurnchartEvent & { turnId: string; parentTurnId: string }
  const grandchild = (await h.engine.getTurn(delta.turnId))!
  const child = (await h.engine.getTurn(delta.parentTurnId))!
  return { session, turn, child, grandchild }
}

/** Each turn ended aborted by one transition from the state it was in, with MessageAbortedError stored. */
async function expectAbortedByOneTransition(turnIds: string[], from: Record<string, string>) {
  const engine = await readableEngine()
  try {
    await expectAbortedIn(engine, turnIds, from)
  } finally {
    if (engine !== h.engine) await engine.close()
  }
}

/** The harness's engine, or one on its database when that engine was closed (recovery off: it only reads). */
async function readableEngine(): Promise<Engine> {
  try {
    await h.engine.listSessions()
    return h.engine
  } catch {
    return createEngine({ database: h.dbPath, model: modelFor(h.server), recovery: { onOpen: false, intervalMs: 0 } })
  }
}

async function expectAbortedIn(engine: Engine, turnIds: string[], from: Record<string, string>) {
  for (const id of turnIds) {
    const row = (await engine.getTurn(id))!
    expect(row).toMatchObject({ outcome: 'aborted', state: 'aborted' })
    expect(row.error?.name).toBe('MessageAbortedError')
    const log = await engine.transitions(id)
    expect(log.filter((t) => t.to === 'aborted')).toHaveLength(1)
    expect(log.at(-1)).toMatchObject({ from: from[id], to: 'aborted' })
    const assistant = (await engine.messages(row.sessionId)).filter((m) => m.info.role === 'assistant').at(-1)!
    expect(assistant.info.error?.name).toBe(new MessageAbortedError().name)
    // Open parts closed: no text without an end, no call still pending or running.
    for (const part of assistant.parts) {
      if (part.type === 'text') expect(part.time.end).toBeDefined()
      if (part.type === 'tool') expect(['completed', 'error']).toContain(part.state.status)
    }
  }
}

test.each([
  ['turn.abort()', async (t: { turn: { abort(): void } }) => t.turn.abort()],
  ['engine.abort(session)', async (t: { session: { id: string } }) => h.engine.abort(t.session.id)],
  ['close({ abortTurns: true })', async () => h.engine.close({ abortTurns: true })],
])('aborting the parent by %s while the grandchild streams ends all three aborted, one transition each', async (_name, abort) => {
  const tree = await treeWithStreamingGrandchild()
  const dones = [tree.turn.done, h.engine.activeTurn(tree.child.sessionId)!.done, h.engine.activeTurn(tree.grandchild.sessionId)!.done]
  await abort(tree as never)
  const results = await Promise.all(dones)
  expect(results.map((r) => r.outcome)).toEqual(['aborted', 'aborted', 'aborted'])
  await expectAbortedByOneTransition([tree.turn.id, tree.child.id, tree.grandchild.id], {
    [tree.turn.id]: 'tool-running',
    [tree.child.id]: 'tool-running',
    [tree.grandchild.id]: 'streaming',
  })
})

test("a tool timeout of the parent's agent tool aborts the child and the grandchild; the call is an error part and the parent goes on", async () => {
  // The timeout must not fire before the grandchild has taken its (hanging) reply: the scripted
  // replies go to whichever request comes next, so an early timeout hands the parent the child's.
  // 400 ms was too short on a loaded machine (a run of the whole suite beside other work).
  h = await createHarness({ tools: { researcher: delegate('researcher', ['fact']), fact: delegate('fact finder') }, toolExecution: { timeoutMs: 1500 } })
  h.server.tool('researcher', { task: 'find the capital' }, { id: 'call_parent' })
  h.server.tool('fact', { task: 'capital of France' }, { id: 'call_child' })
  h.server.push({ type: 'stream', chunks: [{ text: 'Par' }], end: 'hang' })
  h.server.text('The researcher timed out.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'what is the capital?')
  expect((await turn.done).outcome).toBe('completed')
  const [child] = await h.engine.childTurns(turn.id)
  const [grandchild] = await h.engine.childTurns(child.id)
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === grandchild.id && e.to === 'aborted')
  await h.waitForEvent((e) => e.type === 'turn.transition' && e.turnId === child.id && e.to === 'aborted')
  await expectAbortedByOneTransition([child.id, grandchild.id], { [child.id]: 'tool-running', [grandchild.id]: 'streaming' })
  expect((await toolPartsOf(session.id))[0].state).toMatchObject({ status: 'error', error: expect.stringMatching(/timed out/) })
})

test("a child that fails is its parent's tool error part, and the parent decides what to do next", async () => {
  h = await createHarness({ tools: { researcher: delegate('researcher') }, retry: { maxAttempts: 1 } })
  h.server.tool('researcher', { task: 'find the capital' }, { id: 'call_parent' })
  h.server.error(400, { error: { message: 'bad request from the child' } })
  h.server.text('The researcher failed; I will answer myself: Paris.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'what is the capital?')
  expect((await turn.done).outcome).toBe('completed')
  const [child] = await h.engine.childTurns(turn.id)
  expect(child.outcome).toBe('failed')
  const part = (await toolPartsOf(session.id))[0]
  expect(part.state).toMatchObject({ status: 'error', error: expect.stringContaining(`the sub-agent's turn ${child.id} ended failed`) })
  // The parent's model saw the error as the call's result.
  const toolMessage = h.server.requests[2].body.messages.find((m: { role: string }) => m.role === 'tool')
  expect(toolMessage.content).toContain('ended failed')
})

test('a budget of N output tokens over a tree stops it before the first model call past N: no call is made, the tree ends failed', async () => {
  h = await createHarness({ tools: { researcher: delegate('researcher', ['fact']), fact: delegate('fact finder') }, budget: { tokens: { output: 12 } } })
  // Parent step 1: 5 output tokens; child step 1: 5 (10 so far); grandchild step 1: 5 (15: past 12).
  h.server.tool('researcher', { task: 'find the capital' }, { id: 'call_parent' })
  h.server.tool('fact', { task: 'capital of France' }, { id: 'call_child' })
  h.server.text('Paris')
  h.server.text('never asked for')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'what is the capital?')
  const result = await turn.done
  expect(result.outcome).toBe('failed')
  expect(BudgetExceededError.isInstance(result.error)).toBe(true)
  const [child] = await h.engine.childTurns(turn.id)
  const [grandchild] = await h.engine.childTurns(child.id)
  // Three calls made (5 + 5 + 5 output tokens); the child's second call was refused: it would have gone past 12.
  expect(h.server.requests).toHaveLength(3)
  expect(result.error).toMatchObject({ limit: 'tokens.output', max: 12, reached: 15, turnId: child.id })
  for (const id of [turn.id, child.id]) {
    const row = (await h.engine.getTurn(id))!
    expect(row).toMatchObject({ outcome: 'failed' })
    expect(row.error).toMatchObject({ name: 'BudgetExceededError', limit: 'tokens.output', reached: 15, turnId: child.id })
    // The chart shows it: the budget's own edge, decided by the step gate after the tools, the error
    // in the row's payload (the parent's own gate refuses the step after the child's failed call).
    expect((await h.engine.transitions(id)).at(-1)).toMatchObject({ from: 'tool-running', event: 'budget.exceeded', to: 'failed', payload: { error: { name: 'BudgetExceededError' } } })
  }
  expect((await h.engine.getTurn(grandchild.id))!.outcome).toBe('completed')
  expect((await toolPartsOf(session.id))[0].state).toMatchObject({ status: 'error', error: expect.stringContaining('BudgetExceededError') })
})

test('a prompt budget of steps, and a session budget, apply field by field over the engine one', async () => {
  h = await createHarness({ budget: { steps: 100, cost: 1000 } })
  h.server.text('one')
  h.server.text('two')
  const session = await h.engine.createSession({ budget: { steps: 1 } })
  expect((await h.engine.prompt(session.id, 'a').done).outcome).toBe('completed')
  const second = await h.engine.prompt(session.id, 'b', { budget: { steps: 0 } }).done
  expect(second.outcome).toBe('failed')
  expect(second.error).toMatchObject({ name: 'BudgetExceededError', limit: 'steps', max: 0, reached: 0 })
  expect(h.server.requests).toHaveLength(1)
  expect(() => h.engine.prompt(session.id, 'c', { budget: { tokens: { outputs: 3 } } as never })).toThrow(/options.budget.tokens.outputs/)
})

test("an approval a child waits for is seen from the parent's session and answered with approve", async () => {
  const { tool } = await import('ai')
  const deploy = tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async ({ env }) => `deployed to ${env}` })
  h = await createHarness({ tools: { ops: delegate('ops agent', ['deploy']), deploy } })
  h.server.tool('ops', { task: 'deploy to prod' }, { id: 'call_parent' })
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_deploy' })
  h.server.text('Deployed.')
  h.server.text('The ops agent deployed.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  const requested = (await h.waitForEvent((e) => e.type === 'approval.requested')) as Extract<TurnchartEvent, { type: 'approval.requested' }>
  const [child] = await h.engine.childTurns(turn.id)
  expect(requested).toMatchObject({ turnId: child.id, parentTurnId: turn.id, calls: [{ callId: 'call_deploy', tool: 'deploy' }] })
  const status = await h.engine.readStatus(session.id)
  expect(status).toMatchObject({ type: 'busy', turnId: turn.id, state: 'tool-running', approvals: [{ callId: 'call_deploy', tool: 'deploy', input: { env: 'prod' }, turnId: child.id }] })
  await h.engine.approve(child.id, 'call_deploy')
  expect((await turn.done).outcome).toBe('completed')
  expect((await toolPartsOf(child.sessionId))[0].state).toMatchObject({ status: 'completed', output: 'deployed to prod' })
})

test('a fork copies the child sessions of the turns it copies, as its own children; prune keeps a running tree whole', async () => {
  h = await createHarness({ tools: { researcher: delegate('researcher') } })
  h.server.tool('researcher', { task: 'find the capital' }, { id: 'call_parent' })
  h.server.text('Paris')
  h.server.text('Done: Paris.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'what is the capital?')
  await turn.done
  const [child] = await h.engine.childTurns(turn.id)
  const messages = await h.engine.messages(session.id)
  // At the prompt: the call is not copied, so its child session is not either.
  const early = await h.engine.fork(session.id, messages[0].info.id)
  expect((await h.engine.listSessions({ children: true })).filter((s) => s.parentSessionId === early.id)).toEqual([])
  const copy = await h.engine.fork(session.id, messages.at(-1)!.info.id)
  const copies = (await h.engine.listSessions({ children: true })).filter((s) => s.parentSessionId === copy.id)
  expect(copies).toHaveLength(1)
  expect((await h.engine.messages(copies[0].id)).map((m) => m.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join(''))).toEqual(
    (await h.engine.messages(child.sessionId)).map((m) => m.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')),
  )
  await h.engine.deleteSession(copy.id)
  expect(await h.engine.getSession(copies[0].id)).toBeUndefined()
  expect(await h.engine.getSession(child.sessionId)).toBeDefined()
  // The tree ended: prune takes the parent's and the child's logs together.
  expect(await h.engine.prune({ olderThan: Date.now() + 1000 })).toBeGreaterThan(0)
  expect(await h.engine.transitions(child.id)).toEqual([])
  expect(await h.engine.transitions(turn.id)).toEqual([])
})

test('close() without abortTurns leaves the tree open, children included; the next engine resumes it with one child per call', async () => {
  const tree = await treeWithStreamingGrandchild()
  await h.engine.close()
  h.server.text('Paris')
  h.server.text('The capital is Paris.')
  h.server.text('Done: Paris.')
  const next = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { researcher: delegate('researcher', ['fact']), fact: delegate('fact finder') }, recovery: { onOpen: false, intervalMs: 0 }, controlPollIntervalMs: 20 })
  try {
    for (const id of [tree.turn.id, tree.child.id, tree.grandchild.id]) expect((await next.getTurn(id))!.outcome).toBeNull()
    const resumed = await next.recover()
    expect(resumed.map((t) => t.id)).toEqual([tree.turn.id, tree.child.id, tree.grandchild.id])
    expect(await resumed[0].done).toMatchObject({ outcome: 'completed', text: 'Done: Paris.' })
    expect(await next.childTurns(tree.turn.id)).toEqual([expect.objectContaining({ id: tree.child.id, outcome: 'completed' })])
    expect(await next.childTurns(tree.child.id)).toEqual([expect.objectContaining({ id: tree.grandchild.id, outcome: 'completed' })])
  } finally {
    await next.close()
  }
})
