/**
 * The turn statechart. Pure: no I/O. Actors are placeholders that `src/turn/start-turn.ts`
 * replaces through `.provide()`; guards, actions and the retry delay read only context and
 * the event, so replaying the persisted transition log through `transition()` reaches the
 * same states (the decisions that need clocks, headers or configuration are made by the
 * actors and carried in the events).
 *
 * Load it in the Stately inspector or in `@xstate/graph` as it is.
 */
import { and, assign, fromCallback, fromPromise, setup } from 'xstate'
import type { ChartError, TurnContext, TurnEvent, TurnInput, TurnOutput } from './turn.types'

export interface StreamStepInput {
  turnId: string
  step: number
  attempt: number
  waitedMs: number
}
export interface RunToolsInput {
  turnId: string
  step: number
}
export interface CompactInput {
  turnId: string
  step: number
  /** The compaction was caused by a failed request (retry the step) or by usage. */
  afterCompaction: 'continue' | 'complete'
  /** Attempt of the summary request (1-based) and the retry wait so far, for the retry policy. */
  attempt: number
  waitedMs: number
}

function notProvided(name: string): never {
  throw new Error(`turn chart actor '${name}' is not provided; use startTurn() from turnchart`)
}

function toChartError(error: unknown): ChartError {
  if (typeof error === 'object' && error !== null && 'name' in error && 'message' in error) {
    const record = error as { toJSON?: () => ChartError; name: unknown; message: unknown }
    if (typeof record.toJSON === 'function') return record.toJSON()
    return { name: String(record.name), message: String(record.message) }
  }
  return { name: 'UnknownError', message: String(error) }
}

const overflowError = (reason: 'auto-compaction-off' | 'compaction-limit'): ChartError => ({
  name: 'ContextOverflowError',
  reason,
  message:
    reason === 'auto-compaction-off'
      ? 'the context is full and compaction.auto is false'
      : 'the context is still full after the maximum number of compactions in this turn',
})

export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    events: {} as TurnEvent,
    input: {} as TurnInput,
    output: {} as TurnOutput,
  },
  actors: {
    /** Consumes one step's LLM stream; sends `step.finished` or `step.failed`. */
    streamStep: fromCallback<TurnEvent, StreamStepInput>(() => notProvided('streamStep')),
    /** Runs the finished step's tool calls. */
    runTools: fromPromise<void, RunToolsInput>(async () => notProvided('runTools')),
    /** Summarises the history into a summary message. */
    compact: fromPromise<void, CompactInput>(async () => notProvided('compact')),
  },
  guards: {
    hasToolCalls: ({ event }) => event.type === 'step.finished' && event.toolCalls > 0,
    doomLoopDetected: ({ event }) => event.type === 'step.finished' && !!event.doomLoop,
    needsApproval: ({ event }) => event.type === 'step.finished' && (event.approvals?.length ?? 0) > 0,
    isPendingApproval: ({ context, event }) =>
      (event.type === 'tool.approved' || event.type === 'tool.denied') && context.pendingApprovals.includes(event.callId),
    isLastPendingApproval: ({ context, event }) =>
      (event.type === 'tool.approved' || event.type === 'tool.denied') &&
      context.pendingApprovals.length === 1 &&
      context.pendingApprovals[0] === event.callId,
    usageOverflowed: ({ event }) => event.type === 'step.finished' && event.overflow,
    errorIsOverflow: ({ event }) => event.type === 'step.failed' && event.overflow,
    retryAllowed: ({ event }) => event.type === 'step.failed' && event.retryDelayMs !== null,
    overflowPending: ({ context }) => context.overflowPending,
    canCompact: ({ context }) => context.autoCompact && context.compactions < context.maxCompactions,
    continuesAfterCompaction: ({ context }) => context.afterCompaction === 'continue',
    compactionRetryAllowed: ({ event }) => typeof (event as unknown as { error?: { retryDelayMs?: unknown } }).error?.retryDelayMs === 'number',
    retryingCompaction: ({ context }) => context.retryTarget === 'compacting',
    interruptedWhileStreaming: ({ context }) => context.interruptedIn === 'streaming',
    interruptedWhileRunningTools: ({ context }) => context.interruptedIn === 'tool-running',
    interruptedWhileWaiting: ({ context }) => context.interruptedIn === 'retry-waiting',
    interruptedWhileCompacting: ({ context }) => context.interruptedIn === 'compacting',
  },
  actions: {
    startFirstStep: assign({ step: 1, attempt: 1, waitedMs: 0 }),
    startNextStep: assign({
      step: ({ context }) => context.step + 1,
      attempt: 1,
      waitedMs: 0,
      overflowPending: false,
    }),
    scheduleRetry: assign({
      retryDelayMs: ({ event }) => (event.type === 'step.failed' ? (event.retryDelayMs ?? 0) : 0),
      waitedMs: ({ context, event }) =>
        context.waitedMs + (event.type === 'step.failed' ? (event.retryDelayMs ?? 0) : 0),
      error: ({ event }) => (event.type === 'step.failed' ? event.error : null),
      retryTarget: 'streaming' as const,
    }),
    scheduleCompactionRetry: assign(({ context, event }) => {
      const error = toChartError((event as unknown as { error: unknown }).error)
      const delay = typeof error.retryDelayMs === 'number' ? error.retryDelayMs : 0
      return { retryDelayMs: delay, waitedMs: context.waitedMs + delay, error, retryTarget: 'compacting' as const }
    }),
    startNextAttempt: assign({ attempt: ({ context }) => context.attempt + 1, retryDelayMs: 0 }),
    rememberApprovals: assign({
      pendingApprovals: ({ event }) => (event.type === 'step.finished' ? [...(event.approvals ?? [])] : []),
    }),
    settleApproval: assign({
      pendingApprovals: ({ context, event }) =>
        event.type === 'tool.approved' || event.type === 'tool.denied'
          ? context.pendingApprovals.filter((id) => id !== event.callId)
          : context.pendingApprovals,
    }),
    rememberDoomLoop: assign({ error: ({ event }) => (event.type === 'step.finished' ? (event.doomLoop ?? null) : null) }),
    markOverflowPending: assign({ overflowPending: ({ event }) => event.type === 'step.finished' && event.overflow }),
    compactThenComplete: assign({ afterCompaction: 'complete' as const }),
    compactThenContinue: assign({ afterCompaction: 'continue' as const }),
    countCompaction: assign({
      compactions: ({ context }) => context.compactions + 1,
      overflowPending: false,
      attempt: 1,
      waitedMs: 0,
    }),
    markInterruptedStreaming: assign({ interruptedIn: 'streaming' as const }),
    markInterruptedTools: assign({ interruptedIn: 'tool-running' as const }),
    markInterruptedWaiting: assign({ interruptedIn: 'retry-waiting' as const }),
    markInterruptedCompacting: assign({ interruptedIn: 'compacting' as const }),
    resumeRetryWait: assign({
      retryDelayMs: ({ event }) => (event.type === 'turn.recover' ? event.retryDelayMs : 0),
      interruptedIn: null,
    }),
    clearInterruption: assign({ interruptedIn: null }),
    rememberStepError: assign({ error: ({ event }) => (event.type === 'step.failed' ? event.error : null) }),
    rememberFailure: assign({ error: ({ event }) => (event.type === 'turn.fail' ? event.error : null) }),
    rememberActorError: assign({
      error: ({ event }) => toChartError((event as unknown as { error: unknown }).error),
    }),
    rememberOverflowAutoOff: assign({
      error: ({ context }) =>
        overflowError(context.autoCompact ? 'compaction-limit' : 'auto-compaction-off'),
    }),
    setCompleted: assign({ outcome: 'completed' as const, error: null }),
    setFailed: assign({ outcome: 'failed' as const }),
    setAborted: assign({
      outcome: 'aborted' as const,
      error: { name: 'MessageAbortedError', message: 'The turn was aborted' },
    }),
  },
  delays: {
    /** The retry delay chosen by the retry policy when the step failed. */
    retryDelay: ({ context }) => context.retryDelayMs,
  },
}).createMachine({
  id: 'turn',
  initial: 'idle',
  context: ({ input }) => ({
    turnId: input.turnId,
    sessionId: input.sessionId,
    step: 0,
    attempt: 1,
    retryDelayMs: 0,
    waitedMs: 0,
    retryTarget: 'streaming',
    autoCompact: input.autoCompact,
    maxCompactions: input.maxCompactions,
    compactions: 0,
    overflowPending: false,
    afterCompaction: 'continue',
    error: null,
    outcome: null,
    interruptedIn: null,
    pendingApprovals: [],
  }),
  output: ({ context }) => ({ outcome: context.outcome ?? 'aborted', error: context.error }),
  on: {
    'turn.abort': { target: '.aborted' },
  },
  states: {
    idle: {
      on: {
        'turn.start': { target: 'streaming', actions: 'startFirstStep' },
        // The row that would start the turn could not be written: it fails before any effect.
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
      },
    },
    streaming: {
      invoke: {
        id: 'streamStep',
        src: 'streamStep',
        input: ({ context }) => ({
          turnId: context.turnId,
          step: context.step,
          attempt: context.attempt,
          waitedMs: context.waitedMs,
        }),
      },
      on: {
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
        'turn.crashed': { target: 'interrupted', actions: 'markInterruptedStreaming' },
        'step.finished': [
          { guard: 'doomLoopDetected', target: 'failed', actions: 'rememberDoomLoop' },
          { guard: 'needsApproval', target: 'awaiting-approval', actions: ['markOverflowPending', 'rememberApprovals'] },
          { guard: 'hasToolCalls', target: 'tool-running', actions: 'markOverflowPending' },
          {
            guard: and(['usageOverflowed', 'canCompact']),
            target: 'compacting',
            actions: ['compactThenComplete', 'countCompaction'],
          },
          { guard: 'usageOverflowed', target: 'failed', actions: 'rememberOverflowAutoOff' },
          { target: 'completed' },
        ],
        'step.failed': [
          {
            guard: and(['errorIsOverflow', 'canCompact']),
            target: 'compacting',
            actions: ['compactThenContinue', 'countCompaction'],
          },
          { guard: 'errorIsOverflow', target: 'failed', actions: 'rememberOverflowAutoOff' },
          { guard: 'retryAllowed', target: 'retry-waiting', actions: 'scheduleRetry' },
          { target: 'failed', actions: 'rememberStepError' },
        ],
      },
    },
    'retry-waiting': {
      on: {
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
        'turn.crashed': { target: 'interrupted', actions: 'markInterruptedWaiting' },
      },
      after: {
        retryDelay: [
          { guard: 'retryingCompaction', target: 'compacting', actions: 'startNextAttempt' },
          { target: 'streaming', actions: 'startNextAttempt' },
        ],
      },
    },
    /** Tool calls wait for `engine.approve` / `engine.deny`; persisted, survives a restart. */
    'awaiting-approval': {
      on: {
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
        'tool.approved': [
          { guard: 'isLastPendingApproval', target: 'tool-running', actions: 'settleApproval' },
          { guard: 'isPendingApproval', actions: 'settleApproval' },
        ],
        'tool.denied': [
          { guard: 'isLastPendingApproval', target: 'tool-running', actions: 'settleApproval' },
          { guard: 'isPendingApproval', actions: 'settleApproval' },
        ],
      },
    },
    'tool-running': {
      on: {
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
        'turn.crashed': { target: 'interrupted', actions: 'markInterruptedTools' },
      },
      invoke: {
        id: 'runTools',
        src: 'runTools',
        input: ({ context }) => ({ turnId: context.turnId, step: context.step }),
        onDone: [
          {
            guard: and(['overflowPending', 'canCompact']),
            target: 'compacting',
            actions: ['compactThenContinue', 'countCompaction'],
          },
          { guard: 'overflowPending', target: 'failed', actions: 'rememberOverflowAutoOff' },
          { target: 'streaming', actions: 'startNextStep' },
        ],
        onError: { target: 'failed', actions: 'rememberActorError' },
      },
    },
    compacting: {
      on: {
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
        'turn.crashed': { target: 'interrupted', actions: 'markInterruptedCompacting' },
      },
      invoke: {
        id: 'compact',
        src: 'compact',
        input: ({ context }) => ({
          turnId: context.turnId,
          step: context.step,
          afterCompaction: context.afterCompaction,
          attempt: context.attempt,
          waitedMs: context.waitedMs,
        }),
        onDone: [
          { guard: 'continuesAfterCompaction', target: 'streaming', actions: 'startNextStep' },
          { target: 'completed' },
        ],
        onError: [
          { guard: 'compactionRetryAllowed', target: 'retry-waiting', actions: 'scheduleCompactionRetry' },
          { target: 'failed', actions: 'rememberActorError' },
        ],
      },
    },
    /**
     * The process running the turn died; a new engine found it. Entered only through the
     * log (`turn.crashed`, written by recovery); left by `turn.recover` (policy `resume`) or
     * `turn.abort` (policy `abort`).
     */
    interrupted: {
      on: {
        'turn.recover': [
          { guard: 'interruptedWhileStreaming', target: 'streaming', actions: ['clearInterruption', 'startNextStep'] },
          { guard: 'interruptedWhileRunningTools', target: 'tool-running', actions: 'clearInterruption' },
          { guard: 'interruptedWhileWaiting', target: 'retry-waiting', actions: 'resumeRetryWait' },
          { guard: 'interruptedWhileCompacting', target: 'compacting', actions: 'clearInterruption' },
        ],
      },
    },
    completed: { type: 'final', entry: 'setCompleted' },
    failed: { type: 'final', entry: 'setFailed' },
    aborted: { type: 'final', entry: 'setAborted' },
  },
})

export type TurnMachine = typeof turnMachine
