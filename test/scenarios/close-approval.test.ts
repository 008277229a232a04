/**
 * close() at every state of a turn that asks for approval, before the decision: the next engine
 * on the database always finds the approval pending (status and `approval.requested`), and
 * approving it there runs the tool exactly once.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, turnStateName, type Engine, type TurnchartEvent } from '../../src'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
let next: Engine | undefined
afterEach(async () => {
  await next?.close()
  next = undefined
  await h?.close()
})

let executions = 0
const tools = {
  danger: tool({
    description: 'Does something that needs a human',
    inputSchema: z.object({ target: z.string() }),
    needsApproval: true,
    execute: async ({ target }) => {
      executions++
      return `done to ${target}`
    },
  }),
}

/** `entering-approval`: the chart is in awaiting-approval in memory, its row not yet committed. */
type CloseAt = 'idle' | 'streaming' | 'mid-stream' | 'entering-approval' | 'awaiting-approval'

async function closeAt(at: CloseAt): Promise<void> {
  executions = 0
  h = await createHarness({ tools })
  const session = await h.engine.createSession()
  if (at === 'streaming' || at === 'mid-stream') h.server.push({ type: 'stream', chunks: [{ text: 'let me think ' }], end: 'hang' })
  h.server.tool('danger', { target: 'prod' }, { id: 'call_danger' })
  h.server.text('all done')

  const closing = new Promise<void>((resolve) => {
    const off = h.engine.subscribe((event) => {
      const reached =
        (at === 'streaming' && event.type === 'turn.transition' && event.to === 'streaming') ||
        (at === 'mid-stream' && event.type === 'part.delta') ||
        (at === 'awaiting-approval' && event.type === 'turn.transition' && event.to === 'awaiting-approval')
      if (reached) {
        off()
        resolve()
      }
    })
  })
  const turn = h.engine.prompt(session.id, 'deploy')
  if (at === 'entering-approval') {
    await new Promise<void>((resolve) => {
      const sub = turn.actor.subscribe((snapshot) => {
        if (turnStateName(snapshot) === 'awaiting-approval') {
          sub.unsubscribe()
          resolve()
        }
      })
    })
  } else if (at !== 'idle') await closing
  // (the request is in flight: a step whose row committed makes it unless the turn stops first)
  if (at === 'streaming') await h.server.waitForCall(1)
  await h.engine.close()
  // A turn waiting for its approval is parked by close(); one that has not yet told its engine
  // it waits (entering-approval: the same tick) or that is still working is released.
  const closedAs = await turn.done.then(() => 'resolved', (error: Error) => error.name)
  if (at === 'awaiting-approval') expect(closedAs).toBe('TurnParkedError')
  else if (at === 'entering-approval') expect(['TurnParkedError', 'EngineClosedError']).toContain(closedAs)
  else expect(closedAs).toBe('EngineClosedError')

  const events: TurnchartEvent[] = []
  let requested!: (event: Extract<TurnchartEvent, { type: 'approval.requested' }>) => void
  const approvalRequested = new Promise<Extract<TurnchartEvent, { type: 'approval.requested' }>>((resolve) => (requested = resolve))
  next = await createEngine({
    database: h.dbPath,
    model: modelFor(h.server),
    tools,
    recovery: { onOpen: false },
  })
  next.subscribe((event) => {
    events.push(event)
    if (event.type === 'approval.requested') requested(event)
  })
  const resumed = await next.recover()
  if (closedAs === 'TurnParkedError') {
    // Parked: the next engine's recovery leaves it; its approval is read from the rows, and the
    // approve takes it.
    expect(resumed).toEqual([])
    expect(await next.readStatus(session.id)).toMatchObject({ type: 'busy', turnId: turn.id, state: 'awaiting-approval', approvals: [{ callId: 'call_danger' }] })
  } else {
    expect(resumed.map((t) => t.id)).toEqual([turn.id])
    const request = await approvalRequested
    expect(request.calls).toEqual([{ callId: 'call_danger', tool: 'danger', input: { target: 'prod' } }])
    expect(next.status(session.id)).toMatchObject({ type: 'busy', turnId: turn.id, state: 'awaiting-approval' })
  }
  expect(executions).toBe(0)
  const completed = new Promise<void>((resolve) => next!.subscribe((event) => event.type === 'turn.transition' && event.turnId === turn.id && event.to === 'completed' && resolve()))
  await next.approve(turn.id, 'call_danger')
  await completed
  expect(executions).toBe(1)
  const parts = (await next.messages(session.id)).flatMap((m) => m.parts)
  expect(parts.find((p) => p.type === 'tool')).toMatchObject({ state: { status: 'completed', output: 'done to prod' } })
  expect((await next.replay(turn.id)).at(-1)?.state).toBe('completed')
}

test.each<CloseAt>(['idle', 'streaming', 'mid-stream', 'entering-approval', 'awaiting-approval'])(
  'closed in %s: the next engine finds the approval pending and runs the tool once on approval',
  async (at) => {
    await closeAt(at)
  },
)
