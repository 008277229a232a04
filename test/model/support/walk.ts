/**
 * Walks one planned path of the chart against the real engine and checks, step by step,
 * that the engine took exactly that path and persisted what each step implies.
 */
import type { TurnInput } from '../../../machines/turn.types'
import { turnStateName, type TurnchartEvent } from '../../../src'
import { edgeOf, isFinal, planPath, retryWaitStates, type ModelEvent, type PlannedStep } from './chart-model'
import { recipes, type Arrangement, type WalkResult } from './recipes'
import { rigOutput, storedAssistantParts, turnInvariantViolations, type Rig } from './rig'

export class MissingRecipeError extends Error {}

/**
 * The planned path, extended when it does not end in a final state: with the last edge's
 * recipe's `end` events, `turn.abort` by default.
 */
export function completePath(input: TurnInput, events: ModelEvent[]): PlannedStep[] {
  let planned = planPath(input, events)
  if (!planned.ok) throw new Error(`the path does not walk the chart (event ${planned.at} is ignored)`)
  const last = planned.steps.at(-1)
  if (last && !isFinal(last.to)) {
    const ending = recipes[last.edge]?.end ?? [{ type: 'turn.abort' }]
    const end = typeof ending === 'function' ? ending(planned.steps) : ending
    planned = planPath(input, [...events, ...end])
    if (!planned.ok || !isFinal(planned.steps.at(-1)!.to)) throw new Error(`cannot end the turn from ${last.to} with ${end.map((e) => e.type).join(', ')}`)
  }
  return planned.steps
}

export function arrange(steps: PlannedStep[]): Arrangement {
  const plan: Arrangement = { replies: [], tools: [], gate: [], budgetSteps: null, abortAt: null, abortAfterCalls: 0, failWrites: [], optionalReplies: 0, decisions: [], resolutions: [], steers: [], output: false, models: false, throttle: null }
  for (const [index, step] of steps.entries()) {
    const recipe = recipes[step.edge]
    if (!recipe) {
      throw new MissingRecipeError(
        `no recipe drives the real engine along edge "${step.edge}": add one to test/model/support/recipes.ts (see docs/testing.md)`,
      )
    }
    recipe.arrange({ plan, index, event: step.event, steps })
  }
  return plan
}

const describeRow = (r: { from: string; event: string; to: string }) => `${r.from} --${r.event}--> ${r.to}`

/**
 * Runs the turn and asserts: the turn.transition events and the persisted log are the planned
 * steps (minus the rows whose write the plan made fail), each persisted event replayed from
 * the planned snapshot takes the planned edge, the session statuses follow the states, the
 * turn row and parts are final, and each edge's own check holds. Returns the edges walked.
 */
export async function walk(rig: Rig, steps: PlannedStep[]): Promise<{ edges: string[]; result: WalkResult }> {
  const plan = arrange(steps)
  rig.server.push(...plan.replies)
  rig.tools.splice(0, rig.tools.length, ...plan.tools)
  rig.gate.splice(0, rig.gate.length, ...plan.gate)
  const callsBefore = rig.server.calls
  if (plan.throttle) rig.fillRateWindow(plan.throttle === 'lifts' ? 300 : 60_000)
  const session = await rig.engine.createSession()
  const turn = rig.engine.prompt(session.id, 'walk the chart', {
    ...(plan.budgetSteps === null ? {} : { budget: { steps: plan.budgetSteps } }),
    ...(plan.output ? { output: rigOutput } : {}),
    ...(plan.models ? { model: ['default', 'backup'] } : plan.throttle ? { model: ['limited'] } : {}),
  })
  rig.onGateAbort = () => turn.abort()
  for (const seq of plan.failWrites) rig.failTransitionWrite(turn.id, seq)
  const mine = (e: TurnchartEvent) => 'sessionId' in e && e.sessionId === session.id

  // Per-step checks, run when each state is entered (the row is committed before the event).
  const stepChecks: Array<Promise<void>> = []
  const unsubscribe = rig.engine.subscribe((event) => {
    if (event.type !== 'turn.transition' || event.turnId !== turn.id) return
    const check = checkEntered(rig, session.id, turn.id, event.to, event.seq)
    check.catch(() => undefined) // awaited below; never an unhandled rejection if the walk fails first
    stepChecks.push(check)
  })
  // Steers, each as the actor enters its state (synchronously: stored with that state's row, before its model call).
  if (plan.steers.length > 0) {
    const entries = new Map<string, number>()
    let current = turnStateName(turn.actor.getSnapshot())
    const steering = turn.actor.subscribe((snapshot) => {
      const state = turnStateName(snapshot)
      if (state === current) return
      current = state
      entries.set(state, (entries.get(state) ?? 0) + 1)
      for (const steer of plan.steers) {
        if (steer.state === state && steer.entry === entries.get(state)) void rig.engine.steer(session.id, steer.text)
      }
    })
    void turn.done.finally(() => steering.unsubscribe()).catch(() => undefined)
  }
  if (plan.abortAt === 0) turn.abort()
  else if (plan.abortAt !== null) {
    const seq = plan.abortAt
    void Promise.all([
      rig.waitFor((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.seq === seq),
      plan.abortAfterCalls > 0 ? rig.server.waitForCall(callsBefore + plan.abortAfterCalls) : undefined,
    ]).then(() => turn.abort(), () => turn.abort())
  }
  // Approvals and denials, each once the engine is waiting in the state the plan says (the row
  // entering it is published), after checking that the call's part waits for it in the database.
  let decisionError: unknown
  void (async () => {
    for (const d of plan.decisions) {
      await rig.waitFor((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.seq === d.at)
      const part = (await storedAssistantParts(rig.engine, session.id)).find((p) => p.type === 'tool' && p.callId === d.callId)
      expect(part?.type === 'tool' && part.state).toMatchObject({ status: 'pending', approval: 'required' })
      if (d.decision === 'approve') await rig.engine.approve(turn.id, d.callId)
      else await rig.engine.deny(turn.id, d.callId, d.reason)
    }
  })().catch((error) => {
    decisionError = error
    turn.abort()
  })
  // Resolutions of the waiting call, each once the engine waits in the state the plan says.
  void (async () => {
    for (const r of plan.resolutions) {
      await rig.waitFor((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.seq === r.at)
      const part = (await storedAssistantParts(rig.engine, session.id)).find((p) => p.type === 'tool' && (p.state.status === 'in-doubt' || p.state.status === 'deferred'))
      expect(part?.type === 'tool' && part.state.status).toBe(r.how === 'retry' ? 'in-doubt' : 'deferred')
      if (part?.type === 'tool') await rig.engine.resolveCall(turn.id, part.callId, r.how === 'retry' ? { retry: true } : { output: { resolved: true } })
    }
  })().catch((error) => {
    decisionError = error
    turn.abort()
  })
  let timeout: NodeJS.Timeout | undefined
  const result = await Promise.race([
    turn.done,
    new Promise<never>((_, reject) => (timeout = setTimeout(() => reject(new Error(`the turn did not end; log so far: ${rig.events.filter((e) => e.type === 'turn.transition' && e.turnId === turn.id).map((e) => JSON.stringify(e)).join(' ')}`)), 15_000))),
  ]).finally(() => clearTimeout(timeout)) // a pending timer would keep jest alive for 15 s after the run
  unsubscribe()
  if (decisionError) throw decisionError
  await Promise.all(stepChecks)

  // A row the plan made fail is replaced by the failure's own row (same seq, from the last committed state).
  const expected = steps.map((step, i) => ({ seq: i + 1, from: step.from, event: step.event.type, to: step.to, step }))
  const rows = await rig.engine.transitions(turn.id)
  expect(rows.map(describeRow)).toEqual(expected.map(describeRow))
  expect(rows.map((r) => r.seq)).toEqual(expected.map((r) => r.seq))
  const published = rig.events.filter((e): e is Extract<TurnchartEvent, { type: 'turn.transition' }> => e.type === 'turn.transition' && e.turnId === turn.id)
  expect(published.map(describeRow)).toEqual(expected.map(describeRow))

  // The persisted payload, from the planned snapshot, takes the planned edge.
  const edges: string[] = []
  for (const [i, row] of rows.entries()) {
    const step = expected[i].step
    expect(edgeOf(step.before, { ...row.payload, type: row.event })).toBe(step.edge)
    edges.push(step.edge, ...step.eventless)
  }

  // Statuses follow the states: busy / retry while active, idle at the end.
  const statuses = rig.events.filter((e) => mine(e) && e.type === 'session.status').map((e) => (e as { status: { type: string; state?: string } }).status)
  expect(statuses).toEqual(
    expected.map((row) =>
      isFinal(row.to) ? { type: 'idle' } : retryWaitStates.has(row.to) ? expect.objectContaining({ type: 'retry' }) : expect.objectContaining({ type: 'busy', state: row.to }),
    ),
  )

  // Each committed entry into awaiting-approval published one approval.requested with the step's waiting calls.
  const requested = rig.events.filter((e): e is Extract<TurnchartEvent, { type: 'approval.requested' }> => e.type === 'approval.requested' && e.turnId === turn.id)
  const entries = rows.map((row, i) => ({ row, step: expected[i].step })).filter(({ row }) => row.to === 'awaiting-approval' && row.from !== 'awaiting-approval')
  expect(requested.map((e) => e.calls.map((c) => c.callId))).toEqual(entries.map(({ step }) => step.event.approvals))
  for (const call of requested.flatMap((e) => e.calls)) expect(call).toMatchObject({ tool: 'work', input: { ask: true } })

  expect(await turnInvariantViolations(rig.engine, session.id, turn.id)).toEqual([])
  const record = await rig.engine.getTurn(turn.id)
  const messages = await rig.engine.messages(session.id)
  const walkResult: WalkResult = {
    result,
    turn: record!,
    parts: await storedAssistantParts(rig.engine, session.id),
    messages,
    requests: rig.server.requests.slice(callsBefore).map((r) => r.body),
    events: rig.events.filter(mine),
    plan,
  }
  expect(walkResult.turn.outcome).toBe(steps.at(-1)!.to)
  const calls = rig.server.calls - callsBefore
  expect(calls).toBeLessThanOrEqual(plan.replies.length)
  expect(calls).toBeGreaterThanOrEqual(plan.replies.length - plan.optionalReplies)
  for (const step of steps) for (const edge of [step.edge, ...step.eventless]) recipes[edge]?.check?.(walkResult)
  return { edges, result: walkResult }
}

/** What must be persisted on entering a state (only facts later writes cannot undo). */
async function checkEntered(rig: Rig, sessionId: string, turnId: string, state: string, seq: number): Promise<void> {
  const parts = await storedAssistantParts(rig.engine, sessionId)
  const rows = await rig.engine.transitions(turnId)
  expect(rows.some((row) => row.seq === seq && row.to === state)).toBe(true)
  if (state === 'tool-running') {
    const tools = parts.filter((p) => p.type === 'tool')
    expect(tools.length).toBeGreaterThan(0)
    for (const tool of tools) if (tool.type === 'tool') expect(tool.state.status).not.toBe('pending')
  }
  if (retryWaitStates.has(state)) {
    // the failed attempt's text stays, closed (a later attempt may already be streaming)
    const latest = new Map<number, number>()
    for (const part of parts) latest.set(part.step ?? 0, Math.max(latest.get(part.step ?? 0) ?? 0, part.attempt ?? 1))
    for (const part of parts) {
      if ((part.type === 'text' || part.type === 'reasoning') && (part.attempt ?? 1) < latest.get(part.step ?? 0)!) expect(part.time.end).toBeDefined()
    }
  }
  if (isFinal(state)) {
    const turn = await rig.engine.getTurn(turnId)
    expect(turn).toMatchObject({ state, outcome: state })
  }
}
