/**
 * One recipe per edge of the turn chart: the concrete events that take the edge (offered to
 * the path search of ./chart-model), and how to make the REAL engine produce that event when it
 * is in the edge's source state (server replies, tool behaviours, an abort, a storage failure).
 *
 * Adding an edge to the machine = adding one entry here, keyed by the edge's name as
 * `edgeKey()` prints it (the failing test names the missing key).
 */
import type { TurnchartEvent } from '../../../src'
import type { ScriptReply } from '../../../src/testing'
import type { Part } from '../../../src/core/types'
import type { TurnRecord } from '../../../src/core/types'
import type { TurnResult } from '../../../src/turn/turn-handle'
import type { ModelEvent, PlannedStep } from './chart-model'
import { gateFailureMessage, type GateBehaviour, type ToolBehaviour } from './rig'

export interface Arrangement {
  /** Server replies, one per HTTP call, in order. */
  replies: ScriptReply[]
  /** Behaviours of the `work` tool calls, in call order. */
  tools: ToolBehaviour[]
  /** Answers of the rig's step rule, one per visit of the step gate, in order. */
  gate: GateBehaviour[]
  /** The prompt's budget of model calls (`budget.steps`); null: none. */
  budgetSteps: number | null
  /** Abort once the engine has entered the state at this path position (0: idle, at once). */
  abortAt: number | null
  /** Abort only once this many replies have been requested (the state's own request is in flight). */
  abortAfterCalls: number
  /**
   * Transition rows (seq) whose insert must fail inside the engine's transaction (unless it is
   * the failure's own `turn.fail` row, which then takes that seq from the last committed state).
   */
  failWrites: number[]
  /** Replies at the end that the engine may never request (a storage failure can beat the request). */
  optionalReplies: number
  /** `engine.approve` / `engine.deny` of a waiting call, once the row with seq `at` (entering awaiting-approval) is published. */
  decisions: Decision[]
  /** `engine.resolveCall` of the waiting call (in doubt: retry; deferred: an output), once the row with seq `at` is published. */
  resolutions: Array<{ at: number; how: 'retry' | 'output' }>
  /**
   * `engine.steer` of a message as the actor enters `state` for the `entry`-th time (in the same
   * loop turn: the steer is stored with the row entering it, before the state's model call).
   */
  steers: Array<{ state: string; entry: number; text: string }>
  /** The prompt asks for structured output (`output: rigOutput`): its final answers are checked at the gate. */
  output: boolean
  /** The prompt names two models (`model: ['default', 'backup']`, both the rig's server): a failure of the provider's kind falls back. */
  models: boolean
  /**
   * The prompt asks the rate-limited model (`model: ['limited']`), whose window the rig fills
   * first: its first step is throttled until the window `lifts` (soon) or `holds` (a minute).
   */
  throttle: 'lifts' | 'holds' | null
}

export interface Decision {
  at: number
  callId: string
  decision: 'approve' | 'deny'
  reason?: string
}

export interface ArrangeContext {
  plan: Arrangement
  /** Position of this edge in the path, 0-based. Its log row has seq index+1; the row that entered its source has seq index. */
  index: number
  /** The concrete event of the path at this position. */
  event: ModelEvent
  /** The whole planned path. */
  steps: PlannedStep[]
}

export interface WalkResult {
  result: TurnResult
  turn: TurnRecord
  /** Assistant parts as stored, in order. */
  parts: Part[]
  /** Every stored message (user, assistant, summaries). */
  messages: Array<{ info: { role: string; summary?: boolean; error?: unknown }; parts: Part[] }>
  /** Bodies of the HTTP requests of this walk, in order. */
  requests: unknown[]
  /** Bus events of the walk's session, in order. */
  events: TurnchartEvent[]
  /** What the recipes arranged (decisions made, replies, ...). */
  plan: Arrangement
}

export interface EdgeRecipe {
  /** Concrete events that take this edge from some reachable snapshot. */
  events: ModelEvent[]
  /** Make the engine send that event while it is in the source state. */
  arrange(ctx: ArrangeContext): void
  /** What must be persisted once a walk that took this edge has ended (whatever came after it: paths may end with an abort). */
  check?(walk: WalkResult): void
  /**
   * Events that end a path whose last edge is this one when it does not end in a final state
   * (default: `turn.abort`). For an edge into a state the engine leaves at once by itself; a
   * function of the planned path when that depends on it.
   */
  end?: ModelEvent[] | ((steps: PlannedStep[]) => ModelEvent[])
}

const error = { name: 'ModelError', message: 'model' }
const words = (index: number) => `step${index} alpha beta`
const usage = (overflow: boolean) => (overflow ? { input: 950, output: 10 } : { input: 10, output: 5 })

/** A streamed answer (no tools). */
const textReply = (index: number, overflow: boolean): ScriptReply => ({
  type: 'stream',
  chunks: [{ reasoning: `think${index} ` }, ...words(index).split(' ').map((w) => ({ text: `${w} ` }))],
  usage: usage(overflow),
})
/** A streamed step that calls `work` once. */
const toolReply = (index: number, overflow: boolean): ScriptReply => ({
  type: 'stream',
  chunks: [{ text: `calling${index} ` }, { tool: { name: 'work', input: { n: index } } }],
  usage: usage(overflow),
})
/** A streamed step whose `work` calls need approval (`ask: true`), with the given call ids. */
const askReply = (index: number, ids: string[]): ScriptReply => ({
  type: 'stream',
  chunks: [{ text: `asking${index} ` }, ...ids.map((id, k) => ({ tool: { name: 'work', input: { n: index * 10 + k, ask: true }, id } }))],
  usage: usage(false),
})
/** A streamed step that calls `work` three times with the same input: a doom loop (repeats 3). */
const loopReply = (index: number): ScriptReply => ({
  type: 'stream',
  chunks: [0, 1, 2].map(() => ({ tool: { name: 'work', input: { n: index } } })),
  usage: usage(false),
})
/** Text, then silence until the client gives up. */
const hangingStream = (index: number): ScriptReply => ({ type: 'stream', chunks: [{ text: `partial${index} ` }], end: 'hang' })
const overflowError: ScriptReply = { type: 'error', status: 400, body: { error: { code: 'context_length_exceeded', message: 'too long' } } }
const fatalError: ScriptReply = { type: 'error', status: 400, body: { error: { type: 'invalid_request_error', message: 'bad request' } } }
/** A mid-stream connection reset: retryable, with text of the failed attempt left behind. */
const resetStream = (index: number): ScriptReply => ({ type: 'stream', chunks: [{ text: `lost${index} ` }], end: 'reset' })
/** A retryable error that asks for a long wait (the test acts during it). */
const overloaded: ScriptReply = { type: 'error', status: 503, body: { error: { type: 'overloaded_error', message: 'overloaded' } } }
const longWait: ScriptReply = { type: 'error', status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after-ms': '30000' } }

/** The reply that brought the engine into retry-waiting asks for a long wait instead. */
function waitLong(plan: Arrangement): void {
  plan.replies[plan.replies.length - 1] = longWait
}

const finished = (toolCalls: number, overflow: boolean): ModelEvent => ({
  type: 'step.finished',
  finishReason: toolCalls ? 'tool-calls' : 'stop',
  toolCalls,
  overflow,
})
const failed = (overflow: boolean, retryDelayMs: number | null): ModelEvent => ({ type: 'step.failed', error, overflow, retryDelayMs })
const abort: ModelEvent = { type: 'turn.abort' }
const fail: ModelEvent = { type: 'turn.fail', error }
/** One call waiting for approval, or two (the self-transitions need a second one pending). */
const askIds = [['call_ask_1'], ['call_ask_1', 'call_ask_2']]
const asked = (ids: string[]): ModelEvent => ({ ...finished(ids.length, false), approvals: ids })
const doomLoop: ModelEvent = { ...finished(3, false), doomLoop: { name: 'DoomLoopError', message: 'doom loop' } }
const approved = ['call_ask_1', 'call_ask_2'].map((callId): ModelEvent => ({ type: 'tool.approved', callId }))
// one denial with a reason, one without
const denied: ModelEvent[] = [{ type: 'tool.denied', callId: 'call_ask_1', reason: 'not now' }, { type: 'tool.denied', callId: 'call_ask_2' }]
const toolsOverflowed: ModelEvent = { type: 'tools.finished', overflow: true }

const compactDone = (completes: boolean): ModelEvent => ({ type: 'compaction.finished', completes })
const waitingOn = (status: 'in-doubt' | 'deferred' | 'sleeping'): ModelEvent => ({
  type: 'tools.waiting',
  inDoubt: status === 'in-doubt' ? ['call_w'] : [],
  deferred: status === 'in-doubt' ? [] : ['call_w'],
  ...(status === 'sleeping' ? { sleeping: ['call_w'] } : {}),
  deadline: null,
})
const resolvedAs = (how: 'retry' | 'output'): ModelEvent => ({ type: 'call.resolved', callId: 'call_w', how, deadline: null })
/** A final answer of a turn with structured output (the rig's `{ n: number }`). */
const answered: ModelEvent = { ...finished(0, false), checksOutput: true }
/** The answer the step gate's output check judges: one that matches, unless the gate's next edge sends it back or fails it. */
const outputReply = (index: number, matches: boolean): ScriptReply => ({ type: 'stream', chunks: [{ text: matches ? `{"n":${index}}` : `{"n":"step${index}"}` }], usage: usage(false) })
/** The step gate right after a final answer of a turn with structured output: its rule is not asked. */
const afterAnswer = ({ index, steps }: ArrangeContext) => index > 0 && steps[index - 1].event.checksOutput === true

/** step.finished: the reply that makes the engine report it. */
const arrangeFinished = ({ plan, index, event }: ArrangeContext) => {
  plan.replies.push(event.toolCalls > 0 ? toolReply(index, event.overflow) : textReply(index, event.overflow))
}

const decide = (decision: Decision['decision']) => ({ plan, index, event }: ArrangeContext) => {
  plan.decisions.push({ at: index, callId: event.callId, decision, ...(event.reason ? { reason: event.reason } : {}) })
}

const toolParts = (walk: WalkResult) => walk.parts.filter((p): p is Extract<Part, { type: 'tool' }> => p.type === 'tool')
const deniedText = (reason?: string) => `the user denied this tool call${reason ? `: ${reason}` : ''}`

/** Each decision of the walk is in its part: a denial is an error the model sees, marked denied. */
const expectDecisions = (walk: WalkResult) => {
  for (const d of walk.plan.decisions) {
    const part = toolParts(walk).find((p) => p.callId === d.callId)
    expect(part).toBeDefined()
    if (d.decision === 'deny') expect(part!.state).toMatchObject({ status: 'error', error: deniedText(d.reason), metadata: { denied: true } })
    else expect(part!.state.status === 'error' && part!.state.metadata?.denied).toBeFalsy()
  }
}

/** The calls nobody decided on (still waiting when the turn ended) carry `message`, marked interrupted. */
const expectUndecided = (walk: WalkResult, message: string) => {
  const decided = new Set(walk.plan.decisions.map((d) => d.callId))
  const waiting = toolParts(walk).filter((p) => p.callId.startsWith('call_ask_') && !decided.has(p.callId))
  expect(waiting.length).toBeGreaterThan(0)
  for (const part of waiting) expect(part.state).toMatchObject({ status: 'error', error: message, metadata: { interrupted: true } })
}

const expectOutcome = (walk: WalkResult, outcome: string, errorName?: string) => {
  expect(walk.result.outcome).toBe(outcome)
  expect(walk.turn).toMatchObject({ state: outcome, outcome })
  if (errorName) expect(walk.result.error?.name).toBe(errorName)
}

/** An overflow past the compaction limit: the turn fails with it, and the second summary was never asked for. */
const expectCompactionRefused = (walk: WalkResult) => {
  expectOutcome(walk, 'failed', 'ContextOverflowError')
  expect(walk.result.error).toMatchObject({ reason: 'compaction-limit' })
  expect(walk.messages.filter((m) => m.info.summary)).toHaveLength(1)
}

/** An abort while the step's calls wait (in doubt or deferred): the waiting call ends aborted. */
const abortWhileCallsWait: EdgeRecipe = {
  events: [abort],
  arrange: ({ plan, index }) => {
    plan.abortAt = index
    plan.abortAfterCalls = plan.replies.length
  },
  check: (walk) => {
    expectOutcome(walk, 'aborted', 'MessageAbortedError')
    expect(toolParts(walk).at(-1)?.state).toMatchObject({ status: 'error', error: 'Tool execution aborted', metadata: { interrupted: true } })
  },
}

// the rig's step rule fails the turn
const gateFails: EdgeRecipe = {
  events: [{ type: 'gate.fail', rule: 'model-rule', error: { name: 'UnknownError', message: gateFailureMessage } }],
  arrange: ({ plan }) => plan.gate.push('fail'),
  check: (walk) => {
    expectOutcome(walk, 'failed')
    expect(walk.result.error?.message).toContain(gateFailureMessage)
  },
}

// the budget's own edge: a prompt budget of exactly the model calls made so far
const budgetExceeded: EdgeRecipe = {
  events: [{ type: 'budget.exceeded', error: { name: 'BudgetExceededError', message: 'budget' } }],
  arrange: ({ plan, index, steps }) => {
    plan.gate.push('continue')
    plan.budgetSteps = steps.slice(0, index).filter((s) => s.to === 'streaming' || s.to === 'compacting').length
  },
  check: (walk) => {
    expectOutcome(walk, 'failed', 'BudgetExceededError')
    expect(walk.result.error).toMatchObject({ limit: 'steps', max: walk.plan.budgetSteps })
  },
}

// a message steered into the turn joins its history at the gate; the gate decides again
const steered: EdgeRecipe = {
  events: [{ type: 'turn.steered', messages: 1 }],
  arrange: ({ plan, index, steps }) => {
    plan.gate.push('continue')
    const state = steps[index].from
    const entry = steps.slice(0, index).filter((s) => s.to === state).length
    plan.steers.push({ state, entry, text: `steered in at ${index}` })
  },
  check: (walk) => {
    for (const steer of walk.plan.steers) {
      const user = walk.messages.filter((m) => m.info.role === 'user').flatMap((m) => m.parts)
      expect(user.some((p) => p.type === 'text' && p.text === steer.text)).toBe(true)
      // the model call after the steer sends it (when the turn made one)
      if (walk.result.outcome === 'completed') expect(walk.requests.some((body) => JSON.stringify(body).includes(steer.text))).toBe(true)
    }
  },
}

/** A verdict of the step gate decided by the tools' actor once the step's tools ran (`ok`): the same recipe from `tool-running`. */
const afterTools = (recipe: EdgeRecipe): EdgeRecipe => ({
  ...recipe,
  arrange: (ctx) => {
    ctx.plan.tools.push('ok')
    recipe.arrange(ctx)
  },
})

export const recipes: Record<string, EdgeRecipe> = {
  'idle --turn.start--> running': {
    events: [{ type: 'turn.start' }],
    arrange: () => {}, // engine.prompt() sends it once the prompt is stored
  },
  // the step gate: the rig's step rule answers each visit; a steer, the budget and the rig's stopWhen decide too
  'step-gate --gate.continue--> step': {
    events: [{ type: 'gate.continue' }],
    arrange: ({ plan }) => plan.gate.push('continue'),
  },
  'step-gate --gate.complete--> completed': {
    events: [{ type: 'gate.complete', rule: 'model-rule' }],
    arrange: (ctx) => {
      if (!afterAnswer(ctx)) ctx.plan.gate.push('complete')
    },
    check: (walk) => {
      expectOutcome(walk, 'completed')
      expect(walk.events.filter((e) => e.type === 'turn.transition').at(-1)).toMatchObject({ from: 'step-gate', event: 'gate.complete', to: 'completed' })
    },
  },
  'step-gate --gate.fail--> failed': gateFails,
  'step-gate --budget.exceeded--> failed': budgetExceeded,
  // structured output: the answer did not match; the model is told why and answers again
  'step-gate --output.retry--> step': {
    events: [{ type: 'output.retry', reason: 'n: Invalid input' }],
    arrange: ({ plan, index }) => {
      plan.replies[plan.replies.length - 1] = outputReply(index - 1, false)
    },
    check: (walk) => {
      const retried = walk.requests.some((body) => JSON.stringify(body).includes('does not match the required output schema: n: Invalid input'))
      expect(retried).toBe(true)
    },
  },
  'step-gate --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan }) => plan.gate.push('abort'),
    check: (walk) => expectOutcome(walk, 'aborted', 'MessageAbortedError'),
  },
  'step-gate --turn.steered--> step-gate': steered,
  'idle --turn.fail--> failed': {
    events: [fail],
    // the row that would enter streaming fails: no model call is made
    arrange: ({ plan, index }) => plan.failWrites.push(index + 1),
    check: (walk) => {
      expectOutcome(walk, 'failed', 'StorageError')
      expect(walk.requests).toEqual([])
    },
  },
  'idle --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan, index }) => (plan.abortAt = index),
    check: (walk) => {
      expectOutcome(walk, 'aborted', 'MessageAbortedError')
      expect(walk.parts).toEqual([])
    },
  },

  // streaming: one HTTP call; its reply decides the event
  // running: a write fails (walked from streaming, the shortest path; test/store/each-write-fails.test.ts fails every write)
  'running --turn.fail--> failed': {
    events: [fail],
    // the step finishes; the row leaving streaming fails
    arrange: ({ plan, index }) => {
      plan.replies.push({ type: 'stream', chunks: [{ text: words(index) }] })
      plan.failWrites.push(index + 1)
    },
    check: (walk) => expectOutcome(walk, 'failed', 'StorageError'),
  },
  'streaming --step.finished [hasToolCalls]--> tool-running': {
    events: [finished(1, false), finished(1, true)],
    arrange: arrangeFinished,
    check: (walk) => expect(walk.parts.some((p) => p.type === 'tool')).toBe(true),
  },
  'streaming --step.finished [overflowed && mayCompact]--> compaction': {
    events: [finished(0, true)],
    arrange: arrangeFinished,
  },
  // an overflow that may not compact fails at once, never entering compaction (the rig allows one compaction per turn)
  'streaming --step.finished [overflowed]--> failed': {
    events: [finished(0, true)],
    arrange: arrangeFinished,
    check: expectCompactionRefused,
  },
  'streaming --step.finished [checksOutput]--> step-gate': {
    events: [answered],
    arrange: ({ plan, index }) => {
      plan.output = true
      plan.replies.push(outputReply(index, true))
    },
    check: (walk) => {
      if (walk.result.outcome === 'completed') expect(walk.result.output).toEqual({ n: expect.any(Number) })
    },
    // the gate completes the turn by itself with the answer's object
    end: [{ type: 'gate.complete', rule: 'output' }],
  },
  'streaming --step.finished--> completed': {
    events: [finished(0, false)],
    arrange: arrangeFinished,
    check: (walk) => {
      expectOutcome(walk, 'completed')
      expect(walk.parts.some((p) => p.type === 'step-finish')).toBe(true)
    },
  },
  'streaming --step.failed [overflowed && mayCompact]--> compaction': {
    events: [failed(true, null)],
    arrange: ({ plan }) => plan.replies.push(overflowError),
  },
  'streaming --step.failed [overflowed]--> failed': {
    events: [failed(true, null)],
    arrange: ({ plan }) => plan.replies.push(overflowError),
    check: expectCompactionRefused,
  },
  'streaming --step.failed [retryAllowed]--> retry-waiting': {
    events: [failed(false, 1)],
    arrange: ({ plan, index }) => plan.replies.push(resetStream(index)),
  },
  'streaming --step.failed [fallsBack]--> retry-waiting': {
    events: [{ type: 'step.failed', error, overflow: false, retryDelayMs: 0, fallback: { model: 1, from: 'default', to: 'backup', reason: 'APIError: overloaded' } }],
    arrange: ({ plan }) => {
      plan.models = true
      plan.replies.push(overloaded)
    },
  },
  'streaming --step.failed--> failed': {
    events: [failed(false, null)],
    arrange: ({ plan }) => plan.replies.push(fatalError),
    check: (walk) => expectOutcome(walk, 'failed', 'APIError'),
  },
  'streaming --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan, index }) => {
      plan.replies.push(hangingStream(index))
      plan.abortAt = index
      plan.abortAfterCalls = plan.replies.length
    },
    check: (walk) => {
      expectOutcome(walk, 'aborted', 'MessageAbortedError')
      const text = walk.parts.filter((p) => p.type === 'text').at(-1)
      if (text?.type === 'text') expect(text.time.end).toBeDefined()
    },
  },

  // One edge for both reasons a finished step's calls must not run; the step limit is walked
  // end to end by test/scenarios/conversation.test.ts ("maxSteps"), the doom loop here.
  'streaming --step.finished [stepMustStop]--> failed': {
    events: [doomLoop],
    arrange: ({ plan, index }) => plan.replies.push(loopReply(index)),
    check: (walk) => {
      expectOutcome(walk, 'failed', 'DoomLoopError')
      expect(walk.result.error).toMatchObject({ kind: 'repeat', tool: 'work', input: { n: expect.any(Number) } })
      const tools = toolParts(walk)
      expect(tools).toHaveLength(3)
      for (const tool of tools) {
        expect(tool.state).toMatchObject({ status: 'error', error: 'Tool not run: the turn failed (DoomLoopError)', metadata: { interrupted: true } })
      }
    },
  },
  'streaming --step.finished [needsApproval]--> awaiting-approval': {
    events: askIds.map(asked),
    arrange: ({ plan, index, event }) => plan.replies.push(askReply(index, event.approvals)),
    check: (walk) => {
      expect(toolParts(walk).filter((p) => p.callId.startsWith('call_ask_')).length).toBeGreaterThan(0)
      expectDecisions(walk)
    },
  },

  // awaiting-approval: engine.approve / engine.deny, an abort, a storage failure
  'awaiting-approval --tool.* [isPendingApproval]--> awaiting-approval': {
    events: [...approved, ...denied],
    arrange: (ctx) => decide(ctx.event.type === 'tool.denied' ? 'deny' : 'approve')(ctx),
    // all calls denied: nothing runs, tool-running ends at once; the model gets the denial and answers
    end: (steps) => {
      const decisions = steps.filter((step) => step.event.type === 'tool.approved' || step.event.type === 'tool.denied')
      const allDenied = decisions.every((step) => step.event.type === 'tool.denied')
      return steps.at(-1)!.to === 'tool-running' && allDenied ? [{ type: 'gate.continue' }, finished(0, false)] : [abort]
    },
    check: (walk) => {
      expectDecisions(walk)
      const denial = walk.plan.decisions.filter((d) => d.decision === 'deny').at(-1)
      if (denial && walk.result.outcome === 'completed') expect(JSON.stringify(walk.requests.at(-1))).toContain(deniedText(denial.reason))
    },
  },
  'awaiting-approval --always [allApprovalsDecided]--> tool-running': {
    events: [], // taken by the last decision, in the same transition
    arrange: () => {},
    check: (walk) => {
      expectDecisions(walk)
      expect(walk.events.some((e) => e.type === 'turn.transition' && e.from === 'awaiting-approval' && e.to === 'tool-running')).toBe(true)
    },
  },
  'awaiting-approval --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan, index }) => {
      plan.abortAt = index
      plan.abortAfterCalls = plan.replies.length
    },
    check: (walk) => {
      expectOutcome(walk, 'aborted', 'MessageAbortedError')
      expectUndecided(walk, 'Tool execution aborted')
    },
  },

  // retry-waiting: the timer, or something during the wait
  'retry-waiting --after(retryDelay)--> streaming': {
    events: [{ type: 'xstate.after.retryDelay.turn.running.step.retry-waiting' }],
    arrange: () => {}, // the failed reply's tiny backoff elapses
  },
  'streaming --step.throttled--> throttled': {
    events: [{ type: 'step.throttled', model: 'limited', until: 0 }],
    arrange: ({ plan, steps, index }) => {
      plan.throttle = steps[index + 1]?.event.type === 'throttle.lifted' ? 'lifts' : 'holds'
    },
    check: (walk) => {
      expect(walk.events.some((e) => e.type === 'turn.throttled')).toBe(true)
      // (nothing was sent while throttled: each request the walk made had its reply)
      expect(walk.requests.length).toBe(walk.plan.replies.length)
    },
  },
  'throttled --throttle.lifted--> streaming': {
    events: [{ type: 'throttle.lifted' }],
    arrange: ({ plan }) => {
      plan.throttle = 'lifts'
    },
  },
  'throttled --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan, index }) => {
      plan.throttle = 'holds'
      plan.abortAt = index
    },
    check: (walk) => {
      expectOutcome(walk, 'aborted', 'MessageAbortedError')
      expect(walk.turn.retryAt).toBeNull()
    },
  },
  'retry-waiting --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan, index }) => {
      waitLong(plan)
      plan.abortAt = index
      plan.abortAfterCalls = plan.replies.length
    },
    check: (walk) => {
      expectOutcome(walk, 'aborted', 'MessageAbortedError')
      expect(walk.turn.retryAt).toBeNull()
    },
  },

  // tool-running: the `work` tool's behaviour decides
  'tool-running --tools.finished [overflowed && mayCompact]--> compaction': {
    events: [toolsOverflowed],
    arrange: ({ plan }) => plan.tools.push('ok'),
    check: (walk) => {
      const tool = walk.parts.find((p) => p.type === 'tool')
      expect(tool?.type === 'tool' && tool.state.status).toBe('completed')
    },
  },
  'tool-running --tools.finished [overflowed]--> failed': {
    events: [toolsOverflowed],
    arrange: ({ plan }) => plan.tools.push('ok'),
    check: expectCompactionRefused,
  },
  // the tools done, their actor decides the step gate: the rig's step rule answers that visit too
  'tool-running --gate.continue--> step': {
    events: [{ type: 'gate.continue' }],
    arrange: ({ plan }) => {
      plan.tools.push('throw') // a throwing tool is a result, not a failure
      plan.gate.push('continue')
    },
    check: (walk) => {
      // (a step whose only call was denied runs nothing: the denial is its result)
      const tool = toolParts(walk).find((p) => !(p.state.status === 'error' && p.state.metadata?.denied))
      // (a deferred call's result handed in is the step's result: nothing else runs)
      if (walk.plan.resolutions.some((r) => r.how === 'output')) return
      if (tool || !walk.plan.decisions.length) expect(tool?.state).toMatchObject({ status: 'error', error: expect.stringMatching(/failed/) })
      // one transition from the tools to the next step: no row enters the gate after them
      expect(walk.events.some((e) => e.type === 'turn.transition' && e.from === 'tool-running' && e.to === 'step-gate')).toBe(false)
    },
  },
  'tool-running --gate.complete--> completed': {
    events: [{ type: 'gate.complete', rule: 'model-rule' }],
    arrange: ({ plan }) => {
      plan.tools.push('ok')
      plan.gate.push('complete')
    },
    check: (walk) => {
      expectOutcome(walk, 'completed')
      expect(walk.events.filter((e) => e.type === 'turn.transition').at(-1)).toMatchObject({ from: 'tool-running', event: 'gate.complete', to: 'completed' })
      expect(toolParts(walk).at(-1)?.state.status).toBe('completed')
    },
  },
  'tool-running --gate.fail--> failed': afterTools(gateFails),
  'tool-running --budget.exceeded--> failed': afterTools(budgetExceeded),
  // a message steered in while the tools ran joins the history once they are done; the gate decides again in its state
  'tool-running --turn.steered--> step-gate': afterTools(steered),
  // calls in doubt or deferred: the `work` tool throws CallOutcomeUnknownError or returns defer()
  'tool-running --tools.waiting--> awaiting-calls': {
    events: [waitingOn('in-doubt'), waitingOn('deferred'), waitingOn('sleeping')],
    arrange: ({ plan, event }) => {
      plan.tools.push((event.inDoubt as string[]).length > 0 ? 'doubt' : event.sleeping ? 'sleep' : 'defer')
      // the step's call gets the id the path's events name (its resolution's row carries it)
      const reply = plan.replies.at(-1)
      if (reply?.type === 'stream') for (const chunk of reply.chunks) if ('tool' in chunk && chunk.tool) (chunk.tool as { id?: string }).id = 'call_w'
    },
    check: (walk) => {
      const waiting = walk.events.filter((e) => e.type === 'calls.waiting')
      expect(waiting.length).toBeGreaterThan(0)
      // the model was not called while the turn waited: every request came before or after the wait
      expect(walk.events.some((e) => e.type === 'turn.transition' && (e.to === 'call-in-doubt' || e.to === 'awaiting-deferred' || e.to === 'sleeping'))).toBe(true)
    },
  },
  'call-in-doubt --always [noCallInDoubt]--> awaiting-deferred': {
    events: [], // taken by tools.waiting with only deferred calls, in the same transition
    arrange: () => {},
  },
  'awaiting-calls --call.resolved [isWaitingCall]--> awaiting-calls': {
    events: [resolvedAs('retry'), resolvedAs('output')],
    arrange: ({ plan, index, event }) => plan.resolutions.push({ at: index, how: event.how as 'retry' | 'output' }),
    // back in tool-running: a retried call runs (the next `work` behaviour), then the model answers
    end: [{ type: 'gate.continue' }, finished(0, false)],
    check: (walk) => {
      const work = toolParts(walk).filter((p) => p.tool === 'work')
      for (const r of walk.plan.resolutions) {
        if (r.how === 'output') expect(work.some((p) => p.state.status === 'completed' && JSON.stringify(p.state.output) === JSON.stringify({ resolved: true }))).toBe(true)
        else expect(work.every((p) => p.state.status !== 'in-doubt')).toBe(true)
      }
    },
  },
  'awaiting-calls --always [callsToRun]--> tool-running': {
    events: [], // taken by the resolution, in the same transition
    arrange: () => {},
    check: (walk) => expect(walk.events.some((e) => e.type === 'turn.transition' && e.event === 'call.resolved' && e.to === 'tool-running')).toBe(true),
  },
  'awaiting-deferred --always [onlySleeping]--> sleeping': {
    events: [], // taken by tools.waiting with only sleeping calls, in the same transition
    arrange: () => {},
    // the turn said it sleeps, and until when: the call's stored deadline, an hour away
    check: (walk) => {
      expect(walk.events.some((e) => e.type === 'turn.transition' && e.to === 'sleeping')).toBe(true)
      const told = walk.events.find((e) => e.type === 'calls.waiting')
      expect(told?.type === 'calls.waiting' && told.calls[0].deadline).toBeGreaterThan(Date.now() + 50 * 60_000)
    },
  },
  'sleeping --turn.abort--> aborted': abortWhileCallsWait,
  'call-in-doubt --turn.abort--> aborted': abortWhileCallsWait,
  'awaiting-deferred --turn.abort--> aborted': abortWhileCallsWait,
  'tool-running --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan, index }) => {
      plan.tools.push('block')
      plan.abortAt = index
      plan.abortAfterCalls = plan.replies.length
    },
    check: (walk) => {
      expectOutcome(walk, 'aborted', 'MessageAbortedError')
      const tool = walk.parts.find((p) => p.type === 'tool')
      expect(tool?.type === 'tool' && tool.state).toMatchObject({ status: 'error', error: 'Tool execution aborted', metadata: { interrupted: true } })
    },
  },

  // compacting: the summary request's reply decides
  'compacting --compaction.finished--> step-gate': {
    events: [compactDone(false)],
    arrange: ({ plan, index }) => plan.replies.push({ type: 'stream', chunks: [{ text: `summary${index}` }] }),
    check: (walk) => expect(walk.messages.filter((m) => m.info.summary)).toHaveLength(1),
  },
  'compacting --compaction.finished [completesTurn]--> completed': {
    events: [compactDone(true)],
    arrange: ({ plan, index }) => plan.replies.push({ type: 'stream', chunks: [{ text: `summary${index}` }] }),
    check: (walk) => {
      expectOutcome(walk, 'completed')
      expect(walk.messages.some((m) => m.info.summary)).toBe(true)
    },
  },
  'compacting --compaction.failed [retryAllowed]--> compaction-retry-waiting': {
    events: [{ type: 'compaction.failed', error: { name: 'CompactionFailedError', message: 'compaction failed: overloaded' }, retryDelayMs: 1 }],
    arrange: ({ plan }) => plan.replies.push(overloaded),
  },
  'compaction-retry-waiting --after(retryDelay)--> compacting': {
    events: [{ type: 'xstate.after.retryDelay.turn.running.compaction.compaction-retry-waiting' }],
    arrange: () => {}, // the summary request's tiny backoff elapses, and the compaction runs again
  },
  'compaction-retry-waiting --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan, index }) => {
      waitLong(plan)
      plan.abortAt = index
      plan.abortAfterCalls = plan.replies.length
    },
    check: (walk) => {
      expectOutcome(walk, 'aborted', 'MessageAbortedError')
      expect(walk.turn.retryAt).toBeNull()
    },
  },
  'compacting --compaction.failed--> failed': {
    events: [{ type: 'compaction.failed', error, retryDelayMs: null }],
    arrange: ({ plan }) => plan.replies.push(fatalError),
    check: (walk) => expectOutcome(walk, 'failed', 'CompactionFailedError'),
  },
  'compacting --turn.abort--> aborted': {
    events: [abort],
    arrange: ({ plan, index }) => {
      plan.replies.push(hangingStream(index))
      plan.abortAt = index
      plan.abortAfterCalls = plan.replies.length
    },
    check: (walk) => expectOutcome(walk, 'aborted', 'MessageAbortedError'),
  },
}
