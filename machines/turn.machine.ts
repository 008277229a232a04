/**
 * The turn statechart. Pure: no I/O. Actors are placeholders that `src/turn/start-turn.ts`
 * replaces through `.provide()`; guards, actions and the retry delay read only context and
 * the event, so replaying the persisted transition log through `transition()` reaches the
 * same states (the decisions that need clocks, headers or configuration are made by the
 * actors and carried in the events).
 *
 * Hierarchy: `running` holds every state in which the turn works, so `turn.fail` and
 * `turn.crashed` are written once; the step (`streaming`, `retry-waiting`) and the compaction
 * (`compacting`, `compaction-retry-waiting`) each own their retry wait; recovery goes back into
 * `running` through a deep history state. The name stored in the log and the turn row is the
 * active leaf's key (`turnStateName`); leaf keys are unique in the chart.
 *
 * Load it in the Stately inspector or in `@xstate/graph` as it is.
 */
import { assign, fromCallback, fromPromise, setup, type StateValue } from 'xstate'
import type { ChartError, TurnContext, TurnEvent, TurnInput, TurnOutput, TurnStateName } from './turn.types'

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

/** An actor's rejection as the chart stores it (only `runTools` can reject: a bug, not a failure). */
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

/** A failure an actor reported with a typed event (`step.failed`, `compaction.failed`). */
const isFailure = (event: TurnEvent): event is Extract<TurnEvent, { type: 'step.failed' | 'compaction.failed' }> =>
  event.type === 'step.failed' || event.type === 'compaction.failed'

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
    /** Summarises the history into a summary message; sends `compaction.finished` or `compaction.failed`. */
    compact: fromCallback<TurnEvent, CompactInput>(() => notProvided('compact')),
  },
  guards: {
    hasToolCalls: ({ event }) => event.type === 'step.finished' && event.toolCalls > 0,
    /** The step's calls must not run: they loop (doom loop, policy `stop`), or the step limit is reached. */
    stepMustStop: ({ context, event }) =>
      event.type === 'step.finished' && (!!event.doomLoop || (event.toolCalls > 0 && context.maxSteps !== null && context.step >= context.maxSteps)),
    needsApproval: ({ event }) => event.type === 'step.finished' && (event.approvals?.length ?? 0) > 0,
    isPendingApproval: ({ context, event }) =>
      (event.type === 'tool.approved' || event.type === 'tool.denied') && context.pendingApprovals.includes(event.callId),
    allApprovalsDecided: ({ context }) => context.pendingApprovals.length === 0,
    usageOverflowed: ({ event }) => event.type === 'step.finished' && event.overflow,
    errorIsOverflow: ({ event }) => event.type === 'step.failed' && event.overflow,
    /** The step's or the summary request's failure may be retried (the actor's retry policy said when). */
    retryAllowed: ({ event }) => isFailure(event) && event.retryDelayMs !== null,
    overflowPending: ({ context }) => context.overflowPending,
    /** Checked on entering `compaction` (after it was counted): auto-compaction off, or one too many. */
    compactionRefused: ({ context }) => !context.autoCompact || context.compactions > context.maxCompactions,
    continuesAfterCompaction: ({ context }) => context.afterCompaction === 'continue',
  },
  actions: {
    startFirstStep: assign({ step: 1, attempt: 1, waitedMs: 0 }),
    startNextStep: assign({
      step: ({ context }) => context.step + 1,
      attempt: 1,
      waitedMs: 0,
      overflowPending: false,
    }),
    /** `streaming` entered by `turn.recover`: recovery closed the interrupted step, so a new one starts. */
    startStepAfterCrash: assign(({ context, event }) =>
      event.type === 'turn.recover' ? { step: context.step + 1, attempt: 1, waitedMs: 0, overflowPending: false } : {},
    ),
    scheduleRetry: assign(({ context, event }) => {
      const delay = isFailure(event) ? (event.retryDelayMs ?? 0) : 0
      return { retryDelayMs: delay, waitedMs: context.waitedMs + delay, error: isFailure(event) ? event.error : null }
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
    /** Why the step stopped: the doom loop the event carries, else the step limit. */
    rememberStop: assign({
      error: ({ context, event }) =>
        event.type === 'step.finished' && event.doomLoop
          ? event.doomLoop
          : {
              name: 'StepLimitError',
              maxSteps: context.maxSteps,
              message: `the turn reached its step limit (maxSteps ${context.maxSteps}) while the model still called tools; the next step was not started`,
            },
    }),
    markOverflowPending: assign({ overflowPending: ({ event }) => event.type === 'step.finished' && event.overflow }),
    compactThenComplete: assign({ afterCompaction: 'complete' as const }),
    compactThenContinue: assign({ afterCompaction: 'continue' as const }),
    countCompaction: assign({
      compactions: ({ context }) => context.compactions + 1,
      overflowPending: false,
      attempt: 1,
      waitedMs: 0,
    }),
    /** `turn.recover`: what is left of a retry wait at the persisted deadline (read only in a retry wait). */
    resumeAfterCrash: assign({ retryDelayMs: ({ event }) => (event.type === 'turn.recover' ? event.retryDelayMs : 0) }),
    rememberFailureOf: assign({ error: ({ event }) => (isFailure(event) ? event.error : null) }),
    rememberFailure: assign({ error: ({ event }) => (event.type === 'turn.fail' ? event.error : null) }),
    rememberActorError: assign({
      error: ({ event }) => toChartError((event as unknown as { error: unknown }).error),
    }),
    rememberOverflowRefused: assign({
      error: ({ context }) => overflowError(context.autoCompact ? 'compaction-limit' : 'auto-compaction-off'),
    }),
    setCompleted: assign({ outcome: 'completed' as const, error: null }),
    setFailed: assign({ outcome: 'failed' as const }),
    setAborted: assign({
      outcome: 'aborted' as const,
      error: { name: 'MessageAbortedError', message: 'The turn was aborted' },
    }),
  },
  delays: {
    /** The retry delay chosen by the retry policy when the step or the summary request failed. */
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
    autoCompact: input.autoCompact,
    maxCompactions: input.maxCompactions,
    compactions: 0,
    overflowPending: false,
    afterCompaction: 'continue',
    error: null,
    outcome: null,
    pendingApprovals: [],
    maxSteps: input.maxSteps ?? null,
  }),
  output: ({ context }) => ({ outcome: context.outcome ?? 'aborted', error: context.error }),
  on: {
    'turn.abort': { target: '.aborted' },
  },
  states: {
    idle: {
      on: {
        'turn.start': { target: 'running', actions: 'startFirstStep' },
        // The row that would start the turn could not be written: it fails before any effect.
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
      },
    },
    /** The turn works: every state here can fail on a write and be interrupted by a crash. */
    running: {
      initial: 'step',
      on: {
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
        // Written by recovery when work was in flight; `interrupted` resumes through `history`.
        'turn.crashed': { target: 'interrupted' },
      },
      states: {
        /** One step: an LLM call, and the waits between its attempts. Entering it starts the step. */
        step: {
          initial: 'streaming',
          states: {
            streaming: {
              entry: 'startStepAfterCrash',
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
                'step.finished': [
                  { guard: 'stepMustStop', target: '#turn.failed', actions: 'rememberStop' },
                  { guard: 'needsApproval', target: '#turn.running.awaiting-approval', actions: ['markOverflowPending', 'rememberApprovals'] },
                  { guard: 'hasToolCalls', target: '#turn.running.tool-running', actions: 'markOverflowPending' },
                  { guard: 'usageOverflowed', target: '#turn.running.compaction', actions: ['compactThenComplete', 'countCompaction'] },
                  { target: '#turn.completed' },
                ],
                'step.failed': [
                  { guard: 'errorIsOverflow', target: '#turn.running.compaction', actions: ['compactThenContinue', 'countCompaction'] },
                  { guard: 'retryAllowed', target: 'retry-waiting', actions: 'scheduleRetry' },
                  { target: '#turn.failed', actions: 'rememberFailureOf' },
                ],
              },
            },
            'retry-waiting': {
              tags: ['retry-wait'],
              after: { retryDelay: { target: 'streaming', actions: 'startNextAttempt' } },
            },
          },
        },
        /** Tool calls wait for `engine.approve` / `engine.deny`; persisted, survives a restart. */
        'awaiting-approval': {
          on: {
            // `tool.approved` or `tool.denied`: each decision is a logged (context-only) transition
            'tool.*': { guard: 'isPendingApproval', actions: 'settleApproval' },
          },
          always: { guard: 'allApprovalsDecided', target: 'tool-running' },
        },
        'tool-running': {
          invoke: {
            id: 'runTools',
            src: 'runTools',
            input: ({ context }) => ({ turnId: context.turnId, step: context.step }),
            onDone: [
              { guard: 'overflowPending', target: 'compaction', actions: ['compactThenContinue', 'countCompaction'] },
              { target: 'step', actions: 'startNextStep' },
            ],
            onError: { target: '#turn.failed', actions: 'rememberActorError' },
          },
        },
        /** The history summarised into a summary message, and the waits between its attempts. */
        compaction: {
          initial: 'compacting',
          // Every overflow enters here (counted); one that may not compact fails the turn at once.
          always: { guard: 'compactionRefused', target: '#turn.failed', actions: 'rememberOverflowRefused' },
          states: {
            compacting: {
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
              },
              on: {
                'compaction.finished': [
                  { guard: 'continuesAfterCompaction', target: '#turn.running.step', actions: 'startNextStep' },
                  { target: '#turn.completed' },
                ],
                'compaction.failed': [
                  { guard: 'retryAllowed', target: 'compaction-retry-waiting', actions: 'scheduleRetry' },
                  { target: '#turn.failed', actions: 'rememberFailureOf' },
                ],
              },
            },
            'compaction-retry-waiting': {
              tags: ['retry-wait'],
              after: { retryDelay: { target: 'compacting', actions: 'startNextAttempt' } },
            },
          },
        },
        /** Where `turn.recover` resumes: the leaf the crash interrupted. */
        history: { type: 'history', history: 'deep' },
      },
    },
    /**
     * The process running the turn died; a new engine found it. Entered only through the
     * log (`turn.crashed`, written by recovery); left by `turn.recover` (policy `resume`) or
     * `turn.abort` (policy `abort`).
     */
    interrupted: {
      on: {
        'turn.recover': { target: 'running.history', actions: 'resumeAfterCrash' },
      },
    },
    completed: { type: 'final', entry: 'setCompleted' },
    failed: { type: 'final', entry: 'setFailed' },
    aborted: { type: 'final', entry: 'setAborted' },
  },
})

export type TurnMachine = typeof turnMachine

/** The active leaf of a state value: `{ running: { step: 'streaming' } }` → `streaming`. */
function leafOf(value: StateValue): string {
  if (typeof value === 'string') return value
  const [key, child] = Object.entries(value)[0] ?? ['', undefined]
  return child === undefined ? key : leafOf(child)
}

/**
 * The state name stored in the transition log, the turn row and status events: the key of the
 * active leaf state (unique in the chart), kebab-case.
 *
 * @example
 * turnStateName(actor.getSnapshot()) // 'retry-waiting' for { running: { step: 'retry-waiting' } }
 */
export function turnStateName(snapshot: { value: StateValue }): TurnStateName {
  return leafOf(snapshot.value) as TurnStateName
}

interface NodeLike {
  key: string
  tags: readonly string[]
  states: Record<string, NodeLike>
}
const allNodes = (node: NodeLike): NodeLike[] => [node, ...Object.values(node.states).flatMap(allNodes)]

/** The stored names of the retry waits (states tagged `retry-wait`): a deadline in `retryAt`, status `retry`. */
export const retryWaitStates: ReadonlySet<string> = new Set(
  allNodes(turnMachine.root as unknown as NodeLike).filter((node) => node.tags.includes('retry-wait')).map((node) => node.key),
)
