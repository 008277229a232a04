/**
 * The engine's prompt calls: `prompt` (a turn now, queued, or interrupting the running one),
 * the queue, and what this engine runs now (`activeTurn`, `status`).
 */
import { abortWithSignal, requireAbortSignal } from './abort-signal'
import { InvalidArgumentError, QueuedPromptCancelledError, SessionBusyError } from '../core/errors'
import { requireId } from '../core/arguments'
import type { PromptOptions, SessionStatus, StructuredOutput } from '../core/types'
import type { ResolvedConfig } from '../config/resolved-config'
import type { PromptQueue, QueuedPrompt } from '../conversation/prompt-queue'
import { turnRequest } from '../conversation/turn-options'
import { userParts, type PromptInput } from '../conversation/user-input'
import type { QueuedPromptRecord } from '../store/store'
import type { TurnServices } from '../turn/turn-config'
import type { RunningTurn, Turn } from '../turn/turn-handle'
import { startTurn } from '../turn/turn-starts'
import type { TurnDeps } from '../turn/run-turn'
import type { EngineCall } from './engine-calls'
import type { RunningTurns } from './running-turns'

/** What `prompt` does on a busy session. */
export type WhenBusy = 'reject' | 'enqueue' | 'interrupt' | 'steer'

export interface PromptCalls {
  /**
   * Starts a turn. `input` is text or an AI SDK user message content (text, image and file
   * parts); `options` are the turn's model and tools (registered names), system prompt, call
   * settings and `maxSteps`. Throws `SessionBusyError` when the session already runs a turn
   * (turns are not queued), `EngineClosedError` after `close()`, `InvalidArgumentError` for a
   * bad input or option, `FileTooLargeError` for bytes over `maxFileBytes`. `whenBusy`:
   * `'reject'` (default) throws `SessionBusyError` on a busy session; `'interrupt'` aborts the
   * turn this engine runs on the session first (one run by another engine makes `done` reject
   * with `SessionBusyError`). `abortSignal` (as `streamText` takes it) aborts the turn as
   * `turn.abort()` does, with the signal's reason; already aborted, the turn ends aborted at once.
   * An unknown session id makes `turn.done` reject with `SessionNotFoundError`.
   */
  prompt<OUTPUT = unknown>(
    sessionId: string,
    input: PromptInput,
    options?: PromptOptions & { output?: StructuredOutput<OUTPUT>; whenBusy?: 'reject' | 'interrupt'; abortSignal?: AbortSignal },
  ): Turn<OUTPUT>
  /**
   * With `whenBusy: 'enqueue'`: stores the prompt and starts it when the session is idle (at
   * once if it is), in order, from any engine on the database, also after a crash. Returns the
   * queued prompt's handle: `{ id, sessionId, done, cancel() }`.
   */
  prompt(sessionId: string, input: PromptInput, options: PromptOptions & { whenBusy: 'enqueue' }): QueuedPrompt
  /**
   * With `whenBusy: 'steer'`: as `steer` (the running turn takes it at its next model call; an
   * idle session starts a turn with it). Returns its handle at once (`stored` says when it is
   * in the database); the turn's options are those of the running turn, so only `whenBusy` is taken.
   */
  prompt(sessionId: string, input: PromptInput, options: { whenBusy: 'steer' }): QueuedPrompt
  /**
   * Sends a message to the session's running turn, wherever it runs: stored at once (resolves
   * then), it joins the turn's history as a user message before the turn's next model call
   * (after the results of the tools that were running), and the model sees it there. When the
   * turn ends before another model call, or no turn runs, it starts the session's next turn:
   * nothing sent is lost, also across a crash. Several steers keep their order. `input`: text
   * or content parts, as `prompt` takes. The handle's `done` follows the turn that delivered it.
   */
  steer(sessionId: string, input: PromptInput): Promise<QueuedPrompt>
  /** The session's queued prompts, oldest first: `{ id, sessionId, input, options, time }`. */
  queue(sessionId: string): Promise<QueuedPromptRecord[]>
  /** Cancels a queued prompt by id; false when its turn already started (or there is no such prompt). */
  cancelQueued(id: string): Promise<boolean>
  /** The running turn of a session, if any. */
  activeTurn(sessionId: string): Turn | undefined
  /**
   * What the session is doing now, from this engine's memory (synchronous, no database read):
   * `idle` for any session this engine runs no turn of, whether or not the session exists.
   */
  status(sessionId: string): SessionStatus
}

export interface PromptCallDeps {
  config: ResolvedConfig
  services: TurnServices
  turns: TurnDeps
  running: RunningTurns
  queue: PromptQueue
  /** The last published status of each session (engine.status). */
  statusOf(sessionId: string): SessionStatus
  /** Throws `EngineClosedError` after close. */
  requireOpen(operation: string): void
  call: EngineCall
}

/**
 * @example
 * const engine = { ...promptCalls({ config, services, turns, running, queue, statusOf, requireOpen, call }), ... }
 */
export function promptCalls(deps: PromptCallDeps): PromptCalls {
  const { running, queue, requireOpen, call } = deps
  return {
    prompt: ((sessionId: string, input: PromptInput, options?: PromptOptions & { whenBusy?: WhenBusy }): Turn | QueuedPrompt => {
      requireOpen('start a turn')
      return promptTurn(deps, requireId('sessionId', sessionId), input, options)
    }) as PromptCalls['prompt'],
    async steer(sessionId, input) {
      requireOpen('steer a turn')
      const queued = queue.enqueue(requireId('sessionId', sessionId), userParts(input, deps.config.maxFileBytes), {}, 'steer')
      await call('steer a turn', () => queued.stored, { once: true })
      return queued
    },
    queue: (sessionId) => call('list queued prompts', () => queue.list(requireId('sessionId', sessionId))),
    cancelQueued: (id) => call('cancel a queued prompt', () => queue.cancel(requireId('id', id))),
    activeTurn(sessionId) {
      requireOpen('get the active turn')
      return running.ofSession(requireId('sessionId', sessionId))
    },
    status(sessionId) {
      requireOpen('get a session status')
      return deps.statusOf(requireId('sessionId', sessionId))
    },
  }
}

/**
 * `prompt`: a turn now, or queued (`whenBusy: 'enqueue'`); on a busy session it is refused
 * (`reject`) or interrupts the running turn, starting once that one has ended (`interrupt`).
 */
function promptTurn(deps: PromptCallDeps, sessionId: string, input: PromptInput, options: (PromptOptions & { whenBusy?: WhenBusy }) | undefined): Turn | QueuedPrompt {
  const { config, running, queue } = deps
  const parts = userParts(input, config.maxFileBytes)
  const { whenBusy = 'reject', abortSignal: signalOption, ...callOptions } = (options ?? {}) as PromptOptions & { whenBusy?: WhenBusy; abortSignal?: unknown }
  if (!['reject', 'enqueue', 'interrupt', 'steer'].includes(whenBusy)) {
    throw new InvalidArgumentError('options.whenBusy', whenBusy, "'reject', 'enqueue', 'interrupt' or 'steer'")
  }
  const abortSignal = requireAbortSignal(signalOption)
  if (abortSignal && (whenBusy === 'enqueue' || whenBusy === 'steer')) {
    throw new InvalidArgumentError('options.abortSignal', abortSignal, `no abortSignal with whenBusy '${whenBusy}' (it aborts a turn started now: cancel a queued prompt with its cancel())`)
  }
  if (whenBusy === 'steer') {
    // A steered message runs with the options of the turn that takes it: a prompt's own would be dropped silently.
    const own = Object.keys(callOptions)
    if (own.length > 0) throw new InvalidArgumentError(`options.${own[0]}`, (callOptions as Record<string, unknown>)[own[0]], "no option with whenBusy 'steer' (the message joins the running turn, with its options)")
    return queue.enqueue(sessionId, parts, {}, 'steer')
  }
  const request = turnRequest(config, deps.services, sessionId, callOptions)
  if (whenBusy === 'enqueue') return queue.enqueue(sessionId, parts, callOptions)
  const current = running.ofSession(sessionId)
  if (current && whenBusy === 'reject') throw new SessionBusyError(sessionId, current.id)
  if (current) {
    current.abort('interrupted by a new prompt')
    request.before = () => current.done.then(() => undefined, () => undefined)
  }
  const turn = running.track(startTurn(deps.turns, sessionId, parts, request))
  if (abortSignal) abortWithSignal(turn, abortSignal)
  return turn
}

/**
 * Starts a queued prompt's turn: the queue row is taken with the turn's insert, so of two
 * engines one starts it.
 *
 * @example
 * queue = new PromptQueue({ ..., start: (record, memory) => running.track(startQueuedTurn(deps, record, memory)) })
 */
export function startQueuedTurn(deps: Pick<PromptCallDeps, 'config' | 'services' | 'turns'>, record: QueuedPromptRecord, memory: Pick<PromptOptions, 'headers' | 'stopWhen' | 'output'>): RunningTurn {
  const request = turnRequest(deps.config, deps.services, record.sessionId, { ...record.options, ...memory }, record.schedule)
  return startTurn(deps.turns, record.sessionId, record.input, {
    ...request,
    turnId: record.id,
    async prepare(tx, turnId) {
      if (!(await tx.queue.take(record.id))) throw new QueuedPromptCancelledError(record.sessionId, record.id)
      return request.prepare(tx, turnId)
    },
  })
}
