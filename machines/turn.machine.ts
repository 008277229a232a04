/**
 * The turn statechart. Pure: no I/O. Actors are placeholders that `src/turn/run-turn.ts`
 * replaces through `.provide()`; guards, actions and the retry delay read only context and
 * the event, so replaying the persisted transition log through `transition()` reaches the
 * same states (the decisions that need clocks, headers, limits or configuration are made by
 * the actors and carried in the events).
 *
 * Routing is in the structure: where a turn goes after a compaction or after its tools is
 * carried by the event that leads there (`compaction.finished { completes }`,
 * `tools.finished { overflow }`), never kept in context for later. Every actor reports with
 * events and never rejects (the runner's gated wrapper turns a throw into the actor's failure
 * event), so the chart has no `xstate.error.actor.*` edges.
 *
 * Before the first model call, after a compaction and after a restart the turn is in `step-gate`
 * (tagged `effect-free`: its row commits with the next one), where the step gate's rules
 * (src/policy/step-gate.ts) send one verdict. After a step's tools the tool actor asks the same
 * rules once the results are in and `tool-running` takes the verdict itself: a tool step is two
 * transitions (`streaming → tool-running → streaming`), each a macrostep with its actor and row.
 *
 * Hierarchy: `running` holds every state in which the turn works, so `turn.fail` and
 * `turn.crashed` are written once; the step (`streaming`, `retry-waiting`) and the compaction
 * (`compacting`, `compaction-retry-waiting`) each own their retry wait; recovery goes back into
 * `running` through a deep history state. The name stored in the log and the turn row is the
 * active leaf's key (`turnStateName`); leaf keys are unique in the chart. Tags: `interruptible`
 * (work may be in flight there: recovery writes `turn.crashed`), `retry-wait` (a deadline is
 * stored, the session status is `retry`).
 *
 * Waiting states (the turn waits on a person or the world) say what they mean on the state, as
 * `meta: { wait }` (a `WaitMeaning`: what settles them, whether they park, how a UI stream ends
 * there); the rest of the code reads it through `waitOf(state)` and names no waiting state.
 * States where the turn works say what bounds their work, as `meta: { work }` (a `WorkMeaning`:
 * the model's idle timeout, the tools' timeouts, a retry's delay, the storage outage), read
 * through `workOf(state)` by the stall watch (src/turn/stall-watch.ts).
 *
 * Load it in the Stately inspector or in `@xstate/graph` as it is.
 */
import { and, assign, fromCallback, setup, type StateValue } from 'xstate'
import { ContextOverflowError, MessageAbortedError, StepLimitError, type SerializedError } from '../src/core/errors'
import type { TurnContext, TurnEvent, TurnInput, TurnOutput, TurnStateName, WaitMeaning, WorkMeaning } from './turn.types'

export interface StreamStepInput {
  turnId: string
  step: number
  attempt: number
  waitedMs: number
  /** Which of the turn's models the attempt asks, and the step's attempt that model began on (absent: the first, since attempt 1). */
  model?: number
  modelSince?: number
}
export interface StepGateInput {
  turnId: string
  /** Steps made so far (0 before the first call). */
  step: number
  maxSteps: number | null
  /** Structured output: answers already sent back for not matching the schema. */
  outputRetries: number
}
/** The tools' input: the step whose calls run, and what the step gate decides with once they have (`StepGateInput`). */
export type RunToolsInput = StepGateInput
export interface CompactInput {
  turnId: string
  step: number
  /** Attempt of the summary request (1-based) and the retry wait so far, for the retry policy. */
  attempt: number
  waitedMs: number
}

function notProvided(name: string): never {
  throw new Error(`turn chart actor '${name}' is not provided; run turns with turnchart's engine`)
}

/** A failure an actor reported with a typed event (`step.failed`, `compaction.failed`). */
const isFailure = (event: TurnEvent): event is Extract<TurnEvent, { type: 'step.failed' | 'compaction.failed' }> =>
  event.type === 'step.failed' || event.type === 'compaction.failed'

/** The event says the context is full (a finished step's usage, a provider's overflow error, the step boundary). */
const isOverflow = (event: TurnEvent) =>
  (event.type === 'step.finished' || event.type === 'step.failed' || event.type === 'tools.finished') && event.overflow

/**
 * Where the step gate's verdicts lead, from `step-gate` and from `tool-running` (whose actor
 * decides the gate once the tools are done). Targets are written from `running`'s children.
 */
const gateVerdicts = {
  'gate.continue': { target: 'step', actions: 'startNextStep' },
  'gate.complete': { target: '#turn.completed' },
  'gate.fail': { target: '#turn.failed', actions: 'rememberFailure' },
  // The run tree's budget is spent: no call is made.
  'budget.exceeded': { target: '#turn.failed', actions: 'rememberFailure' },
} as const

/** A wait on tool calls' results (`resolveCall`, a deadline, `engine.wake`): nothing in flight, so it parks; a UI stream ends there as at a tool step. */
const resultWait = (label: string): WaitMeaning => ({ awaits: 'result', settledBy: ['call.resolved'], parks: true, uiFinish: 'tool-calls', label })

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
    /** The step gate's rules (src/policy/step-gate.ts); sends their verdict: `gate.*`, `budget.exceeded` or `turn.steered`. */
    stepGate: fromCallback<TurnEvent, StepGateInput>(() => notProvided('stepGate')),
    /** Runs the finished step's tool calls, then the step gate; sends its verdict, `tools.finished` (an overflow, a handoff) or `tools.waiting` (or `turn.fail` on a defect). */
    runTools: fromCallback<TurnEvent, RunToolsInput>(() => notProvided('runTools')),
    /** Summarises the history into a summary message; sends `compaction.finished` or `compaction.failed`. */
    compact: fromCallback<TurnEvent, CompactInput>(() => notProvided('compact')),
  },
  guards: {
    hasToolCalls: ({ event }) => event.type === 'step.finished' && event.toolCalls > 0,
    /** The step's calls must not run: they loop (doom loop, policy `stop`), or the step limit is reached. */
    stepMustStop: ({ context, event }) =>
      event.type === 'step.finished' && (!!event.doomLoop || (event.toolCalls > 0 && StepLimitError.reachedAt(context.step, context.maxSteps))),
    /** A final answer of a turn with structured output: checked at the step gate before the turn completes. */
    checksOutput: ({ event }) => event.type === 'step.finished' && event.checksOutput === true,
    needsApproval: ({ event }) => event.type === 'step.finished' && (event.approvals?.length ?? 0) > 0,
    isPendingApproval: ({ context, event }) =>
      (event.type === 'tool.approved' || event.type === 'tool.denied') && context.pendingApprovals.includes(event.callId),
    allApprovalsDecided: ({ context }) => context.pendingApprovals.length === 0,
    isWaitingCall: ({ context, event }) => event.type === 'call.resolved' && (context.inDoubtCalls.includes(event.callId) || context.deferredCalls.includes(event.callId)),
    noCallInDoubt: ({ context }) => context.inDoubtCalls.length === 0,
    /** Every call still waiting settles itself at its deadline (a tool's `sleep()`): nothing is asked of anyone. */
    onlySleeping: ({ context }) => context.deferredCalls.length > 0 && context.deferredCalls.every((id) => context.sleepingCalls.includes(id)),
    /** Every waiting call has its result, or one runs again (`retry`): back to `tool-running`. */
    callsToRun: ({ context }) => context.callRetried || (context.inDoubtCalls.length === 0 && context.deferredCalls.length === 0),
    overflowed: ({ event }) => isOverflow(event),
    /** Another compaction is allowed: automatic compaction is on and the turn's limit is not reached. */
    mayCompact: ({ context }) => context.autoCompact && context.compactions < context.maxCompactions,
    /** The step's or the summary request's failure may be retried (the actor's retry policy said when). */
    retryAllowed: ({ event }) => isFailure(event) && event.retryDelayMs !== null,
    /** The provider failed this model: the step goes on with the turn's next one (decided by the step's actor). */
    fallsBack: ({ event }) => event.type === 'step.failed' && event.fallback !== undefined,
    completesTurn: ({ event }) => event.type === 'compaction.finished' && event.completes,
    restartsStep: ({ event }) => event.type === 'turn.recover' && event.restartStep === true,
  },
  actions: {
    startNextStep: assign({ step: ({ context }) => context.step + 1, attempt: 1, waitedMs: 0, modelSince: 1 }),
    /** The next attempt of the step asks the next model (and counts its own attempts from there). */
    fallBack: assign(({ context, event }) => (event.type === 'step.failed' && event.fallback ? { model: event.fallback.model, modelSince: context.attempt + 1 } : {})),
    scheduleRetry: assign(({ context, event }) => {
      const delay = isFailure(event) ? (event.retryDelayMs ?? 0) : 0
      return { retryDelayMs: delay, waitedMs: context.waitedMs + delay, error: isFailure(event) ? event.error : null }
    }),
    rememberThrottle: assign({ throttledUntil: ({ event }) => (event.type === 'step.throttled' ? event.until : null) }),
    forgetThrottle: assign({ throttledUntil: null }),
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
    rememberWaitingCalls: assign(({ event }) =>
      event.type === 'tools.waiting'
        ? { inDoubtCalls: [...event.inDoubt], deferredCalls: [...event.deferred], sleepingCalls: [...(event.sleeping ?? [])], callDeadline: event.deadline, callRetried: false }
        : {},
    ),
    settleCall: assign(({ context, event }) =>
      event.type === 'call.resolved'
        ? {
            inDoubtCalls: context.inDoubtCalls.filter((id) => id !== event.callId),
            deferredCalls: context.deferredCalls.filter((id) => id !== event.callId),
            sleepingCalls: context.sleepingCalls.filter((id) => id !== event.callId),
            callDeadline: event.deadline,
            callRetried: event.how === 'retry',
          }
        : {},
    ),
    forgetWaitingCalls: assign({ inDoubtCalls: [], deferredCalls: [], sleepingCalls: [], callDeadline: null, callRetried: false }),
    /** Why the step stopped: the doom loop the event carries, else the step limit. */
    rememberStop: assign({
      error: ({ context, event }): SerializedError =>
        event.type === 'step.finished' && event.doomLoop ? event.doomLoop : new StepLimitError(context.maxSteps ?? 0).toJSON(),
    }),
    countOutputRetry: assign({ outputRetries: ({ context }) => context.outputRetries + 1 }),
    countSteered: assign({ steered: ({ context, event }) => context.steered + (event.type === 'turn.steered' ? event.messages : 0) }),
    countCompaction: assign({ compactions: ({ context }) => context.compactions + 1, attempt: 1, waitedMs: 0 }),
    /** `turn.recover`: what is left of a retry wait at the persisted deadline (read only in a retry wait). */
    resumeAfterCrash: assign({ retryDelayMs: ({ event }) => (event.type === 'turn.recover' ? event.retryDelayMs : 0) }),
    rememberFailureOf: assign({ error: ({ event }) => (isFailure(event) ? event.error : null) }),
    rememberFailure: assign({
      error: ({ event }) => (event.type === 'turn.fail' || event.type === 'gate.fail' || event.type === 'budget.exceeded' ? event.error : null),
    }),
    rememberOverflowRefused: assign({
      error: ({ context }) =>
        (context.autoCompact
          ? new ContextOverflowError({ reason: 'compaction-limit', message: 'the context is still full after the maximum number of compactions in this turn' })
          : new ContextOverflowError({ reason: 'auto-compaction-off', message: 'the context is full and compaction.auto is false' })
        ).toJSON(),
    }),
    setCompleted: assign({ outcome: 'completed' as const, error: null }),
    setFailed: assign({ outcome: 'failed' as const }),
    setAborted: assign({ outcome: 'aborted' as const, error: () => new MessageAbortedError().toJSON() }),
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
    model: 0,
    modelSince: 1,
    autoCompact: input.autoCompact,
    maxCompactions: input.maxCompactions,
    compactions: 0,
    error: null,
    outcome: null,
    pendingApprovals: [],
    inDoubtCalls: [],
    deferredCalls: [],
    sleepingCalls: [],
    callDeadline: null,
    callRetried: false,
    throttledUntil: null,
    maxSteps: input.maxSteps ?? null,
    steered: 0,
    outputRetries: 0,
  }),
  output: ({ context }) => ({ outcome: context.outcome ?? 'aborted', error: context.error }),
  on: {
    'turn.abort': { target: '.aborted' },
  },
  states: {
    idle: {
      on: {
        'turn.start': { target: 'running' },
        // The row that would start the turn could not be written: it fails before any effect.
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
      },
    },
    /** The turn works: every state here can fail on a write or on an actor's defect, and be interrupted by a crash. */
    running: {
      initial: 'step-gate',
      on: {
        'turn.fail': { target: 'failed', actions: 'rememberFailure' },
        // Written by recovery when work was in flight; `interrupted` resumes through `history`.
        'turn.crashed': { target: 'interrupted' },
      },
      states: {
        /**
         * Between two model calls (before the first, after a step's tools, after a compaction):
         * the step gate's rules decide whether the next call is made. Effect-free: its row
         * rides in the transaction of the row that leaves it, so the gate adds no commit.
         */
        'step-gate': {
          tags: ['effect-free', 'interruptible'],
          meta: { work: { boundBy: 'storage', label: 'the step gate (its reads of the database)' } satisfies WorkMeaning },
          invoke: {
            id: 'stepGate',
            src: 'stepGate',
            input: ({ context }) => ({ turnId: context.turnId, step: context.step, maxSteps: context.maxSteps, outputRetries: context.outputRetries }),
          },
          on: {
            ...gateVerdicts,
            // Structured output: the answer did not match its schema; the model answers again, told why.
            'output.retry': { target: 'step', actions: ['countOutputRetry', 'startNextStep'] },
            // Steered messages joined the history: the gate decides again, with them.
            'turn.steered': { target: 'step-gate', reenter: true, actions: 'countSteered' },
          },
        },
        /** One step: an LLM call, and the waits between its attempts. */
        step: {
          initial: 'streaming',
          states: {
            streaming: {
              tags: ['interruptible'],
              meta: { work: { boundBy: 'model', label: 'the model stream' } satisfies WorkMeaning },
              invoke: {
                id: 'streamStep',
                src: 'streamStep',
                input: ({ context }) => ({ turnId: context.turnId, step: context.step, attempt: context.attempt, waitedMs: context.waitedMs, model: context.model, modelSince: context.modelSince }),
              },
              on: {
                'step.finished': [
                  { guard: 'stepMustStop', target: '#turn.failed', actions: 'rememberStop' },
                  { guard: 'needsApproval', target: '#turn.running.awaiting-approval', actions: 'rememberApprovals' },
                  { guard: 'hasToolCalls', target: '#turn.running.tool-running' },
                  // Structured output: the gate parses and checks the answer (before an overflow's compaction: the object is the turn's result).
                  { guard: 'checksOutput', target: '#turn.running.step-gate' },
                  // A final answer that filled the context: summarised for the next turn, then the turn completes.
                  { guard: and(['overflowed', 'mayCompact']), target: '#turn.running.compaction', actions: 'countCompaction' },
                  { guard: 'overflowed', target: '#turn.failed', actions: 'rememberOverflowRefused' },
                  { target: '#turn.completed' },
                ],
                'step.failed': [
                  { guard: and(['overflowed', 'mayCompact']), target: '#turn.running.compaction', actions: 'countCompaction' },
                  { guard: 'overflowed', target: '#turn.failed', actions: 'rememberOverflowRefused' },
                  // The provider failed this model: the next attempt asks the turn's next model.
                  { guard: 'fallsBack', target: 'retry-waiting', actions: ['scheduleRetry', 'fallBack'] },
                  { guard: 'retryAllowed', target: 'retry-waiting', actions: 'scheduleRetry' },
                  { target: '#turn.failed', actions: 'rememberFailureOf' },
                ],
                'step.throttled': { target: 'throttled', actions: 'rememberThrottle' },
              },
            },
            'retry-waiting': {
              tags: ['interruptible', 'retry-wait'],
              meta: { work: { boundBy: 'retry-delay', label: "a retry's delay", attempt: 'attempt' } satisfies WorkMeaning },
              after: { retryDelay: { target: 'streaming', actions: 'startNextAttempt' } },
            },
            /**
             * The step's request would pass its model's rate limit (`rateLimits`, held across the
             * fleet): nothing was sent; the turn waits, parked past `parkAfterMs`, until the limit
             * allows it (`throttledUntil`, the row's deadline), when whichever engine sweeps
             * lifts it and the same attempt asks again.
             */
            throttled: {
              meta: {
                wait: { awaits: 'time', settledBy: ['throttle.lifted'], parks: true, label: "its model's rate limit (rateLimits)" } satisfies WaitMeaning,
              },
              on: { 'throttle.lifted': { target: 'streaming', actions: 'forgetThrottle' } },
            },
          },
        },
        /** Tool calls wait for `engine.approve` / `engine.deny`; persisted, survives a restart. */
        'awaiting-approval': {
          meta: {
            wait: {
              awaits: 'decision',
              settledBy: ['tool.approved', 'tool.denied'],
              parks: true,
              uiFinish: 'tool-calls',
              label: 'a decision on its tool calls (approve or deny)',
            } satisfies WaitMeaning,
          },
          on: {
            // `tool.approved` or `tool.denied`: each decision is a logged (context-only) transition
            'tool.*': { guard: 'isPendingApproval', actions: 'settleApproval' },
          },
          always: { guard: 'allApprovalsDecided', target: 'tool-running' },
        },
        /**
         * The step's calls run; then the step gate's verdict, decided by the tools' actor once
         * their results are in (one transition to the next step, not two), or a compaction first
         * when the step filled the context. `tools.finished` (no verdict) leaves for `step-gate`:
         * a handoff holds the turn there; steered messages are decided on there again.
         */
        'tool-running': {
          tags: ['interruptible'],
          meta: { work: { boundBy: 'tools', label: 'its tool calls' } satisfies WorkMeaning },
          invoke: {
            id: 'runTools',
            src: 'runTools',
            input: ({ context }) => ({ turnId: context.turnId, step: context.step, maxSteps: context.maxSteps, outputRetries: context.outputRetries }),
          },
          on: {
            ...gateVerdicts,
            'turn.steered': { target: 'step-gate', actions: 'countSteered' },
            'tools.finished': [
              { guard: and(['overflowed', 'mayCompact']), target: 'compaction', actions: 'countCompaction' },
              { guard: 'overflowed', target: '#turn.failed', actions: 'rememberOverflowRefused' },
              { target: 'step-gate' },
            ],
            // Some calls wait (the others have their results): in doubt first, a person must say what happened.
            'tools.waiting': { target: 'awaiting-calls', actions: 'rememberWaitingCalls' },
          },
        },
        /**
         * Some calls of the step wait for `engine.resolveCall` (the others have their results);
         * nothing is in flight, so recovery resumes the wait as it is. Each resolution is a logged
         * (context-only) transition; the turn goes back to `tool-running` once every call has its
         * result, or at once when a call in doubt runs again (`retry`: the others go on waiting there).
         */
        'awaiting-calls': {
          initial: 'call-in-doubt',
          // The waiting calls are read only here: forgotten on the way out, so a step that waited
          // on none (most steps) assigns nothing for them.
          exit: 'forgetWaitingCalls',
          on: {
            'call.resolved': { guard: 'isWaitingCall', actions: 'settleCall' },
          },
          always: { guard: 'callsToRun', target: 'tool-running' },
          states: {
            /**
             * A call's outcome is unknown (its engine died mid-call, its result was not stored, it
             * threw `CallOutcomeUnknownError`) and its `reconcile` could not tell: the model is not
             * called until a person says what happened. Left for `awaiting-deferred` when only
             * deferred calls wait.
             */
            'call-in-doubt': {
              meta: { wait: resultWait('a person to say what happened to a call in doubt') },
              always: { guard: 'noCallInDoubt', target: 'awaiting-deferred' },
            },
            /**
             * Deferred calls (`defer()`) wait for their results, from any engine or the chat handler;
             * their earliest stored deadline (`callDeadline`, the row's `retry_at`) is settled as an
             * error by whichever engine sweeps past it.
             */
            'awaiting-deferred': {
              meta: { wait: resultWait('the results of deferred calls') },
              always: { guard: 'onlySleeping', target: 'sleeping' },
            },
            /**
             * The calls left settle themselves at their deadline (a tool returned `sleep()`: "check
             * again in ten minutes"): the turn sleeps, parked, until the earliest one (the row's
             * `retry_at`), when whichever engine sweeps settles them with their results and the
             * model is called again; `engine.wake` ends the sleep sooner.
             */
            sleeping: {
              meta: { wait: resultWait('the time its sleep ends (engine.wake ends it sooner)') },
            },
          },
        },
        /** The history summarised into a summary message, and the waits between its attempts. */
        compaction: {
          initial: 'compacting',
          states: {
            compacting: {
              tags: ['interruptible'],
              meta: { work: { boundBy: 'model', label: 'the summary request' } satisfies WorkMeaning },
              invoke: {
                id: 'compact',
                src: 'compact',
                input: ({ context }) => ({ turnId: context.turnId, step: context.step, attempt: context.attempt, waitedMs: context.waitedMs }),
              },
              on: {
                'compaction.finished': [
                  { guard: 'completesTurn', target: '#turn.completed' },
                  { target: '#turn.running.step-gate' },
                ],
                'compaction.failed': [
                  { guard: 'retryAllowed', target: 'compaction-retry-waiting', actions: 'scheduleRetry' },
                  { target: '#turn.failed', actions: 'rememberFailureOf' },
                ],
              },
            },
            'compaction-retry-waiting': {
              tags: ['interruptible', 'retry-wait'],
              meta: { work: { boundBy: 'retry-delay', label: "the summary request's retry delay", attempt: 'summary attempt' } satisfies WorkMeaning },
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
        'turn.recover': [
          // A model call was in flight: recovery closed that step, a new one starts (through the gate).
          { guard: 'restartsStep', target: 'running.step-gate' },
          { target: 'running.history', actions: 'resumeAfterCrash' },
        ],
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
  type: string
  tags: readonly string[]
  meta?: { wait?: WaitMeaning; work?: WorkMeaning }
  invoke: ReadonlyArray<{ src: unknown }>
  transitions: ReadonlyMap<string, ReadonlyArray<{ target?: ReadonlyArray<{ key: string }> }>>
  states: Record<string, NodeLike>
}
const allNodes = (node: NodeLike): NodeLike[] => [node, ...Object.values(node.states).flatMap(allNodes)]
const nodes: readonly NodeLike[] = allNodes(turnMachine.root as unknown as NodeLike)
const taggedStates = (tag: string): ReadonlySet<string> =>
  new Set(nodes.filter((node) => node.tags.includes(tag)).map((node) => node.key))

/** The stored names of the retry waits (tagged `retry-wait`): a deadline in `retryAt`, status `retry`. */
export const retryWaitStates: ReadonlySet<string> = taggedStates('retry-wait')

/** The waiting states by stored name, each with what it means (its `meta.wait`). */
const waits: ReadonlyMap<string, WaitMeaning> = new Map(
  nodes.flatMap((node) => (node.meta?.wait ? [[node.key, node.meta.wait] as const] : [])),
)

/**
 * What the state stored as `state` waits for, when it is a waiting state (its `meta.wait` in the
 * chart); undefined for every other state. The one way the code outside `machines/` tells a
 * waiting state, and what it means.
 *
 * @example
 * waitOf(record.state)?.parks // true for a turn awaiting approval
 */
export function waitOf(state: string): WaitMeaning | undefined {
  return waits.get(state)
}

/** The working states by stored name, each with what bounds its work (its `meta.work`). */
const works: ReadonlyMap<string, WorkMeaning> = new Map(
  nodes.flatMap((node) => (node.meta?.work ? [[node.key, node.meta.work] as const] : [])),
)

/**
 * What bounds the work of the state stored as `state`, when the turn works there (its
 * `meta.work` in the chart); undefined for a waiting state (a person or the world sets its
 * pace), `idle`, `interrupted` and the final states.
 *
 * @example
 * workOf('tool-running')?.boundBy // 'tools'
 */
export function workOf(state: string): WorkMeaning | undefined {
  return works.get(state)
}

/** Every waiting state's stored name with its meaning (the chart's docs and the architecture test list them). */
export function waitingStates(): ReadonlyMap<string, WaitMeaning> {
  return waits
}

/** The stored names of the states a process can die in with work in flight (tagged `interruptible`). */
export const interruptibleStates: ReadonlySet<string> = taggedStates('interruptible')

const only = (found: readonly NodeLike[], what: string): string => {
  if (found.length !== 1) throw new Error(`the turn chart has ${found.length} states ${what}, not one`)
  return found[0]!.key
}

/** The stored name of the state that runs the actor `src` (the one state that invokes it): where that work happens. */
function stateInvoking(src: 'stepGate' | 'streamStep' | 'runTools' | 'compact'): string {
  return only(nodes.filter((node) => node.invoke.some((invoke) => invoke.src === src)), `invoking ${src}`)
}

/** The step gate's state (it invokes `stepGate`): between two model calls. */
export const gateState = stateInvoking('stepGate')
/** The state that streams a step's model call (it invokes `streamStep`). */
export const stepStreamState = stateInvoking('streamStep')
/** The state that runs a step's tool calls (it invokes `runTools`). */
export const toolsState = stateInvoking('runTools')
/** The state that streams the summary request (it invokes `compact`). */
export const summaryState = stateInvoking('compact')
/** The state a crash is logged into (the target of `turn.crashed`), which recovery resumes from. */
export const crashedState = only(
  nodes.flatMap((node) => (node.transitions.get('turn.crashed') ?? []).flatMap((t) => t.target ?? [])) as unknown as NodeLike[],
  'entered by turn.crashed',
)
const finalStates: ReadonlySet<string> = new Set(nodes.filter((node) => node.type === 'final').map((node) => node.key))

/** Whether the state stored as `state` is final: the turn ended there, with that outcome. */
export function isFinalState(state: string): boolean {
  return finalStates.has(state)
}
