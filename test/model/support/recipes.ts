/**
 * One recipe per edge of the turn chart: the concrete events that take the edge (offered to
 * @xstate/graph's path search), and how to make the REAL engine produce that event when it
 * is in the edge's source state (server replies, tool behaviours, an abort, a storage failure).
 *
 * Adding an edge to the machine = adding one entry here, keyed by the edge's name as
 * `edgeKey()` prints it (the failing test names the missing key).
 */
import type { ScriptReply } from '../../../src/testing'
import type { Part } from '../../../src/types'
import type { TurnRecord } from '../../../src/types'
import type { TurnResult } from '../../../src/turn/start-turn'
import type { ModelEvent } from './chart-model'
import type { ToolBehaviour } from './rig'

export interface Arrangement {
  /** Server replies, one per HTTP call, in order. */
  replies: ScriptReply[]
  /** Behaviours of the `work` tool calls, in call order. */
  tools: ToolBehaviour[]
  /** Abort once the engine has entered the state at this path position (0: idle, at once). */
  abortAt: number | null
  /** Abort only once this many replies have been requested (the state's own request is in flight). */
  abortAfterCalls: number
  /** Transition rows (seq) whose insert must fail inside the engine's transaction. */
  failWrites: number[]
  /** Replies at the end that the engine may never request (a storage failure can beat the request). */
  optionalReplies: number
}

export interface ArrangeContext {
  plan: Arrangement
  /** Position of this edge in the path, 0-based. Its log row has seq index+1; the row that entered its source has seq index. */
  index: number
  /** The concrete event of the path at this position. */
  event: ModelEvent
}

export interface WalkResult {
  result: TurnResult
  turn: TurnRecord
  /** Assistant parts as stored, in order. */
  parts: Part[]
  /** Every stored message (user, assistant, summaries). */
  messages: Array<{ info: { role: string; summary?: boolean; error?: unknown }; parts: Part[] }>
}

export interface EdgeRecipe {
  /** Concrete events that take this edge from some reachable snapshot. */
  events: ModelEvent[]
  /** Make the engine send that event while it is in the source state. */
  arrange(ctx: ArrangeContext): void
  /** What must be persisted once a walk that took this edge has ended (whatever came after it: paths may end with an abort). */
  check?(walk: WalkResult): void
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
/** Text, then silence until the client gives up. */
const hangingStream = (index: number): ScriptReply => ({ type: 'stream', chunks: [{ text: `partial${index} ` }], end: 'hang' })
const overflowError: ScriptReply = { type: 'error', status: 400, body: { error: { code: 'context_length_exceeded', message: 'too long' } } }
const fatalError: ScriptReply = { type: 'error', status: 400, body: { error: { type: 'invalid_request_error', message: 'bad request' } } }
/** A mid-stream connection reset: retryable, with text of the failed attempt left behind. */
const resetStream = (index: number): ScriptReply => ({ type: 'stream', chunks: [{ text: `lost${index} ` }], end: 'reset' })
/** A retryable error that asks for a long wait (the test acts during it). */
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
const toolsDone: ModelEvent = { type: 'xstate.done.actor.runTools', output: undefined }
const compactDone: ModelEvent = { type: 'xstate.done.actor.compact', output: undefined }

/** step.finished: the reply that makes the engine report it. */
const arrangeFinished = ({ plan, index, event }: ArrangeContext) => {
  plan.replies.push(event.toolCalls > 0 ? toolReply(index, event.overflow) : textReply(index, event.overflow))
}

const expectOutcome = (walk: WalkResult, outcome: string, errorName?: string) => {
  expect(walk.result.outcome).toBe(outcome)
  expect(walk.turn).toMatchObject({ state: outcome, outcome })
  if (errorName) expect(walk.result.error?.name).toBe(errorName)
}

export const recipes: Record<string, EdgeRecipe> = {
  'idle --turn.start--> streaming': {
    events: [{ type: 'turn.start' }],
    arrange: () => {}, // engine.prompt() sends it once the prompt is stored
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
  'streaming --turn.fail--> failed': {
    events: [fail],
    arrange: ({ plan, index }) => {
      plan.replies.push(hangingStream(index))
      plan.optionalReplies = 1
      plan.failWrites.push(index)
    },
    check: (walk) => expectOutcome(walk, 'failed', 'StorageError'),
  },
  'streaming --step.finished [hasToolCalls]--> tool-running': {
    events: [finished(1, false), finished(1, true)],
    arrange: arrangeFinished,
    check: (walk) => expect(walk.parts.some((p) => p.type === 'tool')).toBe(true),
  },
  'streaming --step.finished [usageOverflowed && canCompact]--> compacting': {
    events: [finished(0, true)],
    arrange: arrangeFinished,
  },
  'streaming --step.finished [usageOverflowed]--> failed': {
    events: [finished(0, true)],
    arrange: arrangeFinished,
    check: (walk) => {
      expectOutcome(walk, 'failed', 'ContextOverflowError')
      expect(walk.result.error).toMatchObject({ reason: 'compaction-limit' })
    },
  },
  'streaming --step.finished--> completed': {
    events: [finished(0, false)],
    arrange: arrangeFinished,
    check: (walk) => {
      expectOutcome(walk, 'completed')
      expect(walk.parts.some((p) => p.type === 'step-finish')).toBe(true)
    },
  },
  'streaming --step.failed [errorIsOverflow && canCompact]--> compacting': {
    events: [failed(true, null)],
    arrange: ({ plan }) => plan.replies.push(overflowError),
  },
  'streaming --step.failed [errorIsOverflow]--> failed': {
    events: [failed(true, null)],
    arrange: ({ plan }) => plan.replies.push(overflowError),
    check: (walk) => {
      expectOutcome(walk, 'failed', 'ContextOverflowError')
      expect(walk.result.error).toMatchObject({ reason: 'compaction-limit' })
    },
  },
  'streaming --step.failed [retryAllowed]--> retry-waiting': {
    events: [failed(false, 1)],
    arrange: ({ plan, index }) => plan.replies.push(resetStream(index)),
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

  // retry-waiting: the timer, or something during the wait
  'retry-waiting --after(retryDelay)--> streaming': {
    events: [{ type: 'xstate.after.retryDelay.turn.retry-waiting' }],
    arrange: () => {}, // the failed reply's tiny backoff elapses
  },
  'retry-waiting --turn.fail--> failed': {
    events: [fail],
    arrange: ({ plan, index }) => {
      waitLong(plan)
      plan.failWrites.push(index)
    },
    check: (walk) => expectOutcome(walk, 'failed', 'StorageError'),
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
  'tool-running --turn.fail--> failed': {
    events: [fail],
    arrange: ({ plan, index }) => {
      plan.tools.push('block')
      plan.failWrites.push(index)
    },
    check: (walk) => expectOutcome(walk, 'failed', 'StorageError'),
  },
  'tool-running --done(runTools) [overflowPending && canCompact]--> compacting': {
    events: [toolsDone],
    arrange: ({ plan }) => plan.tools.push('ok'),
  },
  'tool-running --done(runTools) [overflowPending]--> failed': {
    events: [toolsDone],
    arrange: ({ plan }) => plan.tools.push('ok'),
    check: (walk) => {
      expectOutcome(walk, 'failed', 'ContextOverflowError')
      const tool = walk.parts.find((p) => p.type === 'tool')
      expect(tool?.type === 'tool' && tool.state.status).toBe('completed')
    },
  },
  'tool-running --done(runTools)--> streaming': {
    events: [toolsDone],
    arrange: ({ plan }) => plan.tools.push('throw'), // a throwing tool is a result, not a failure
    check: (walk) => {
      const tool = walk.parts.find((p) => p.type === 'tool')
      expect(tool?.type === 'tool' && tool.state).toMatchObject({ status: 'error', error: expect.stringMatching(/failed/) })
    },
  },
  'tool-running --error(runTools)--> failed': {
    events: [{ type: 'xstate.error.actor.runTools', error }],
    arrange: ({ plan }) => plan.tools.push('hostile'),
    check: (walk) => expectOutcome(walk, 'failed'),
  },
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
  'compacting --turn.fail--> failed': {
    events: [fail],
    arrange: ({ plan, index }) => {
      plan.replies.push(hangingStream(index))
      plan.optionalReplies = 1
      plan.failWrites.push(index)
    },
    check: (walk) => expectOutcome(walk, 'failed', 'StorageError'),
  },
  'compacting --done(compact) [continuesAfterCompaction]--> streaming': {
    events: [compactDone],
    arrange: ({ plan, index }) => plan.replies.push({ type: 'stream', chunks: [{ text: `summary${index}` }] }),
    check: (walk) => expect(walk.messages.filter((m) => m.info.summary)).toHaveLength(1),
  },
  'compacting --done(compact)--> completed': {
    events: [compactDone],
    arrange: ({ plan, index }) => plan.replies.push({ type: 'stream', chunks: [{ text: `summary${index}` }] }),
    check: (walk) => {
      expectOutcome(walk, 'completed')
      expect(walk.messages.some((m) => m.info.summary)).toBe(true)
    },
  },
  'compacting --error(compact)--> failed': {
    events: [{ type: 'xstate.error.actor.compact', error }],
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
