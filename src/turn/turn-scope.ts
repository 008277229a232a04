/**
 * Everything one turn's actors share: its ids, its configuration, its messages in memory (the
 * model history is built from them without rereading the database each step), the part writer
 * and the write queue. The chart holds control data; this holds the data.
 *
 * A scope has a lifecycle of its own: it is made with the turn's ids and its storage lane
 * (queue, writer), then either begun (the prompt stored and the turn's configuration resolved
 * in one transaction) or restored (recovery, from the stored rows). Its configuration is set
 * there, once, and read by the actors only after that.
 */
import type { ModelMessage } from 'ai'
import type { Bus } from '../core/bus'
import { StorageError, TurnchartError } from '../core/errors'
import { newId } from '../core/ids'
import { toModelMessages, TurnModelMessages } from '../llm/model-messages'
import type { ProviderPromptCache } from '../llm/provider-prompt'
import { PartWriter } from './part-writer'
import type { Store, TurnFence } from '../store/store'
import { OutageRetry, type OutagePolicy, type OutageWatch } from '../store/outage'
import type { TurnConfig } from './turn-config'
import { TurnPartStream } from './turn-stream'
import { WriteQueue } from './write-queue'
import { StorageWaitLog } from './turn-log/storage-wait-log'
import type { MessageInfo, MessageWithParts, Part, StepFinishPart, StopConditionStep, ToolPart, UserPartDraft } from '../core/types'
import { stepResults } from './step-results'
import type { StepScope } from '../llm/stream-step'
import type { SummaryScope } from '../compaction/summarize'
import type { ToolRunScope } from '../tools/run-tools'
import type { FirstRowWriter, PromptTransaction, TurnLogScope } from './turn-log/turn-log'

export interface TurnScopeOptions {
  turnId: string
  sessionId: string
  store: Store
  bus: Pick<Bus, 'publish'>
  /** Who may write this turn's rows: every write checks it (fencing). */
  fence: TurnFence
  /** Streamed text is written at most this often. */
  flushIntervalMs: number
  /** How the turn's writes ride out a database outage. */
  outage?: OutagePolicy
  /** Run trees: the parent turn of a child turn (its events carry both ids). */
  parentTurnId?: string
  /**
   * Resolves once the steers this engine is storing for the session are stored: the turn reads
   * the session's steers after it, so one sent here before a model call is in that call.
   */
  steersStored?: () => Promise<void>
}

/**
 * The ports it serves, each declared by the module that uses it: the step (`StepScope`), the
 * summary (`SummaryScope`), the tool runner (`ToolRunScope`), the turn log (`TurnLogScope`); the
 * step gate's rules reach it through `GateTurn` (src/policy/step-gate.ts, built in turn-actors.ts).
 */
export class TurnScope implements StepScope, SummaryScope, ToolRunScope, TurnLogScope {
  readonly turnId: string
  readonly sessionId: string
  /** Run trees: the turn whose tool call started this one. */
  readonly parentTurnId: string | undefined
  readonly store: Store
  readonly fence: TurnFence
  readonly #steersStored: (() => Promise<void>) | undefined
  /** How the turn's writes ride out a database outage (the prompt's, the part writer's). */
  readonly #outage: OutagePolicy
  /** The outage clock of the turn's own reads and writes outside the part writer (steers, a run tree's spending). */
  #retry: OutageRetry | undefined
  /** The queue's change mark when a read last found no steer (`QueueStore.changeMark`): while it holds, there is none to read. */
  #noSteersAt: string | number | undefined
  readonly queue = new WriteQueue()
  readonly writer: PartWriter
  /** The outages the turn waited out, until a transition row records them. */
  readonly storageWaits = new StorageWaitLog()
  /** What the turn publishes, once: its part stream (to the engine's bus, its readers, a late reader's replay). */
  readonly events: TurnPartStream
  /** This turn's messages, in order: the user prompt, assistant messages, summaries. */
  readonly messages: MessageWithParts[] = []
  /** Tool parts of the step that streamed last, in call order. */
  stepTools: ToolPart[] = []
  /** Structured output: the final answer's parsed object, set by the step gate when it matched the schema. */
  output: { value: unknown } | undefined
  #config: TurnConfig | undefined
  readonly #stepResults: StopConditionStep[] = []
  #convertedSteps = 0
  /** The turn's messages as the model sees them, each finished step converted once. */
  readonly #converted = new TurnModelMessages()
  /** Their provider form, each history message and finished step converted once. */
  readonly promptCache: ProviderPromptCache = new WeakMap()
  private history: ModelMessage[] = []
  private assistant: MessageWithParts | undefined
  /** Assistant messages opened but not written yet: written with their first part, or at the turn's end. */
  private readonly unsaved = new Set<string>()

  constructor(options: TurnScopeOptions) {
    const { turnId, sessionId, store, bus, fence } = options
    this.turnId = turnId
    this.sessionId = sessionId
    this.parentTurnId = options.parentTurnId
    this.store = store
    this.fence = fence
    this.#steersStored = options.steersStored
    this.#outage = { outageMs: options.outage?.outageMs ?? 0, watch: this.#outageWatch(options.outage?.watch) }
    const events = (this.events = new TurnPartStream(bus, { turnId, sessionId, ...(options.parentTurnId ? { parentTurnId: options.parentTurnId } : {}) }))
    this.writer = new PartWriter({
      store,
      queue: this.queue,
      // The store writes; the part stream tells what changed (it keeps the parts, and publishes
      // copies): it hears the writer itself, no relay between them.
      listener: events,
      flushIntervalMs: options.flushIntervalMs,
      now: () => Date.now(),
      fence: (tx) => tx.turns.checkFence(turnId, fence),
      outage: this.#outage,
    })
  }

  /** The engine's watch of outages, and the turn's events that say its write waits and goes on. */
  #outageWatch(engine: OutageWatch | undefined): OutageWatch {
    const ids = { sessionId: this.sessionId, turnId: this.turnId }
    return {
      waiting: (operation, cause) => {
        engine?.waiting(operation, cause)
        const since = Date.now()
        this.storageWaits.waiting(operation, since)
        const error = new StorageError(operation, cause).toJSON()
        this.events.publish({ type: 'storage.waiting', ...ids, operation, since, error: this.ready ? this.config.redactor.value(error) : error })
      },
      resumed: (operation, outcome) => {
        engine?.resumed(operation, outcome)
        this.storageWaits.resumed(operation, outcome)
        this.events.publish({ type: 'storage.resumed', ...ids, operation, ...outcome })
      },
    }
  }

  /** The turn's configuration: set when the scope is begun or restored (an actor runs only after that). */
  get config(): TurnConfig {
    if (!this.#config) throw new Error(`turn ${this.turnId}: its configuration is read before the turn began`)
    return this.#config
  }

  /** True once the turn's configuration is set (begun or restored). */
  get ready(): boolean {
    return this.#config !== undefined
  }

  /**
   * Stores the user's prompt (text, or text, image and file parts) and loads the history the
   * model needs, in one transaction. `prepare` runs first in that transaction (it locks the
   * session, inserts the turn row) and resolves the turn's configuration; `firstRow`, last,
   * writes the turn's first transition there too.
   */
  async begin(prompt: string | UserPartDraft[], prepare: (tx: Store) => Promise<TurnConfig>, firstRow?: FirstRowWriter): Promise<void> {
    const now = Date.now()
    const { info, parts } = this.userMessage(typeof prompt === 'string' ? [{ type: 'text', text: prompt }] : prompt, now)
    const transaction: PromptTransaction = async (write) => {
      // Tried again through an outage until the first row's write starts (it sends the turn its
      // first event: what follows a failure there is the turn log's).
      let writing = false
      const store = () =>
        this.store.transaction(async (tx) => {
          // (set here: the first row, written in this transaction, reads the redactor)
          this.#config = await prepare(tx)
          this.history = toModelMessages(await tx.messages.list(this.sessionId, { fromLatestSummary: true }))
          await tx.messages.upsert(info)
          await tx.messages.upsertParts(parts, now)
          writing = write !== undefined
          await write?.(tx)
        })
      await new OutageRetry(this.#outage)
        .run('storing the prompt', store, () => !writing)
        .catch((error: unknown) => {
          // A driver's error (a killed connection, a full disk) named for what failed; the
          // engine's own refusals (a busy or unknown session) stay as they are.
          throw TurnchartError.isTurnchartError(error) ? error : new StorageError('storing the prompt', error)
        })
      // In the history once stored, before the first rows are known committed: the first step
      // reads it as soon as it may act.
      this.messages.push({ info, parts })
    }
    // Inside the queue's job: a write queued meanwhile runs after the first row is known committed.
    const publishFirstRow = await this.queue.run(() => (firstRow ? firstRow(transaction) : transaction().then(() => undefined)))
    this.events.message(info, 'prompt')
    for (const part of parts) this.events.part(part)
    publishFirstRow?.()
  }

  /**
   * Runs a read or a transaction of the turn outside its part writer (a steer's, the run tree's
   * spending) through a database outage: run again while it fails for a reason that passes, up
   * to `storage.outageMs`.
   */
  throughOutage<T>(operation: string, run: () => Promise<T>): Promise<T> {
    this.#retry ??= new OutageRetry(this.#outage)
    return this.#retry.run(operation, run)
  }

  /**
   * Takes the messages steered into the session (`engine.steer`, from any engine) into this
   * turn, before a model call: each stored as a user message of this turn, in the same
   * transaction that takes it from the queue (fenced), in the order they were sent. The next
   * parts go to a new assistant message after them. Returns the messages taken (none: nothing
   * was written; the check is one read, none while the store's queue mark says nothing was
   * queued since the last read found none).
   */
  async takeSteered(): Promise<MessageWithParts[]> {
    await this.#steersStored?.()
    const mark = this.store.queue.changeMark?.()
    if (mark !== undefined && mark === this.#noSteersAt) return []
    if (!(await this.throughOutage('reading the steers', () => this.store.queue.list(this.sessionId))).some((q) => q.kind === 'steer')) {
      this.#noSteersAt = mark
      return []
    }
    this.#noSteersAt = undefined
    // (run again through an outage: a take whose commit was lost with its connection but landed
    // leaves nothing to take, and its messages are in the database, not yet in this turn's memory)
    const taken = await this.queue.run(() =>
      this.throughOutage('taking the steers', () =>
        this.store.transaction(async (tx) => {
          await tx.turns.checkFence(this.turnId, this.fence)
          const now = Date.now()
          const messages = (await tx.queue.takeSteers(this.sessionId)).map((steer) => this.userMessage(steer.input, Date.now()))
          for (const message of messages) {
            await tx.messages.upsert(message.info)
            await tx.messages.upsertParts(message.parts, now)
          }
          return messages
        }),
      ),
    )
    if (taken.length === 0) return []
    this.dropEmptyAssistant()
    this.assistant = undefined
    for (const message of taken) {
      this.messages.push(message)
      this.events.message(message.info, 'steer')
      for (const part of message.parts) this.events.part(part)
    }
    return taken
  }

  /**
   * Structured output: stores a user message of this turn that sends a refused answer back to
   * the model (fenced, as a steer is), and opens a new assistant message after it. Published as
   * a message that joined the running turn (origin `steer`).
   */
  async askAgain(text: string): Promise<void> {
    const message = this.userMessage([{ type: 'text', text }], Date.now())
    await this.queue.run(() =>
      this.throughOutage('asking the model again', () =>
        this.store.transaction(async (tx) => {
          await tx.turns.checkFence(this.turnId, this.fence)
          await tx.messages.upsert(message.info)
          await tx.messages.upsertParts(message.parts, message.info.time.created)
        }),
      ),
    )
    this.assistant = undefined
    this.messages.push(message)
    this.events.message(message.info, 'steer')
    for (const part of message.parts) this.events.part(part)
  }

  /** A user message of this turn holding `drafts` (not stored yet). */
  private userMessage(drafts: UserPartDraft[], now: number): MessageWithParts {
    const info: MessageInfo = { id: newId('msg', now), sessionId: this.sessionId, role: 'user', turnId: this.turnId, time: { created: now } }
    const parts = drafts.map((draft) => ({ ...draft, id: newId('prt', now), sessionId: this.sessionId, messageId: info.id, time: { start: now, end: now } }) as Part)
    return { info, parts }
  }

  /**
   * Rebuilds the scope of an interrupted turn from the database (recovery): the turn's own
   * messages in memory, the history before it, the open assistant message and the tool parts
   * of its last step.
   */
  restore(messages: MessageWithParts[], config: TurnConfig): void {
    this.#config = config
    const { before, own } = splitAtTurn(messages, this.turnId)
    this.history = toModelMessages(before)
    this.messages.push(...own)
    // A reader of the resumed turn's stream gets what was stored before the crash too.
    this.events.seed(own)
    const last = own.at(-1)
    this.assistant = last && last.info.role === 'assistant' && !last.info.summary ? last : undefined
    if (this.assistant) {
      const { step, attempt } = lastAttemptOf(this.assistant.parts)
      this.stepTools = this.assistant.parts.filter(
        (p): p is ToolPart => p.type === 'tool' && (p.step ?? 0) === step && (p.attempt ?? 0) === attempt,
      )
    }
  }

  /** The step-finish part of the last step's last attempt, if that attempt finished. */
  lastStepFinish(): StepFinishPart | undefined {
    const parts = this.assistant?.parts ?? []
    const { step, attempt } = lastAttemptOf(parts)
    return parts.find((p): p is StepFinishPart => p.type === 'step-finish' && (p.step ?? 0) === step && (p.attempt ?? 0) === attempt)
  }

  /**
   * The turn's finished steps up to `step`, as stop conditions read them. Each step is
   * converted once: a boundary reads only the messages that hold steps not converted yet.
   */
  stepResults(step: number): StopConditionStep[] {
    if (step > this.#convertedSteps) {
      const fresh: Part[] = []
      for (const message of [...this.assistantMessages()].reverse()) {
        if (!message.parts.some((p) => (p.step ?? 0) > this.#convertedSteps)) break
        fresh.unshift(...message.parts)
      }
      this.#stepResults.push(...stepResults(fresh, this.#convertedSteps + 1, step))
      this.#convertedSteps = step
    }
    return this.#stepResults
  }

  /** The last step gave a final answer: it finished, and called no tools. */
  lastStepAnswered(): boolean {
    return this.lastStepFinish() !== undefined && this.stepTools.length === 0
  }

  /** The messages to send for the next LLM call. */
  modelMessages(): ModelMessage[] {
    const fromSummary = this.messages.some((m) => m.info.summary)
    const current = this.#converted.convert(this.messages)
    return fromSummary || this.history.length === 0 ? current : [...this.history, ...current]
  }

  /** The assistant message new parts go to; opened on first use (and after a summary). */
  assistantMessage(): MessageWithParts {
    if (!this.assistant) {
      const now = Date.now()
      const info: MessageInfo = {
        id: newId('msg', now),
        sessionId: this.sessionId,
        role: 'assistant',
        turnId: this.turnId,
        time: { created: now },
      }
      this.assistant = { info, parts: [] }
      this.messages.push(this.assistant)
      // Written with its first part: a step that overflows before any part leaves no empty message.
      this.unsaved.add(info.id)
    }
    return this.assistant
  }

  /** The assistant messages of this turn (a compaction splits a turn into two). */
  assistantMessages(): MessageWithParts[] {
    return this.messages.filter(isAssistantAnswer)
  }

  /** Adds a part to `message` and hands it to the writer. */
  addPart(message: MessageWithParts, part: Part): void {
    this.writer.add(part, this.placePart(message, part))
  }

  /**
   * Adds `part` to `message`; returns the message's info when it is not written yet (this is its
   * first part), which the caller hands to the writer with the part.
   */
  placePart(message: MessageWithParts, part: Part): MessageInfo | undefined {
    message.parts.push(part)
    if (!this.unsaved.delete(message.info.id)) return undefined
    return message.info
  }

  /** Persists a message's info (with the next flush) and publishes it. */
  saveMessage(info: MessageInfo): void {
    this.unsaved.delete(info.id)
    this.writer.message(info)
  }

  /** Stores a compaction summary; the next step starts a new assistant message after it. */
  addSummary(text: string, auto: boolean): MessageWithParts {
    this.dropEmptyAssistant()
    const now = Date.now()
    const info: MessageInfo = {
      id: newId('msg', now),
      sessionId: this.sessionId,
      role: 'assistant',
      turnId: this.turnId,
      summary: true,
      time: { created: now, completed: now },
      finish: 'stop',
    }
    const summary: MessageWithParts = { info, parts: [] }
    this.messages.push(summary)
    this.saveMessage(info)
    this.addPart(summary, { id: newId('prt', now), sessionId: this.sessionId, messageId: info.id, type: 'compaction', auto, time: { start: now } })
    this.addPart(summary, { id: newId('prt', now), sessionId: this.sessionId, messageId: info.id, type: 'text', text, time: { start: now, end: now } })
    this.assistant = undefined
    return summary
  }

  /** The open assistant message of a step that failed before any part (an overflow), never written: forgotten. */
  private dropEmptyAssistant(): void {
    const open = this.assistant
    if (!open || open.parts.length > 0 || !this.unsaved.has(open.info.id)) return
    this.unsaved.delete(open.info.id)
    this.messages.splice(this.messages.indexOf(open), 1)
    this.assistant = undefined
  }
}

/** The last step of `parts` and that step's last attempt (a part without a step counts as step 0): one pass, no arrays. */
function lastAttemptOf(parts: readonly Part[]): { step: number; attempt: number } {
  let step = 0
  let attempt = 0
  for (const part of parts) {
    const partStep = part.step ?? 0
    const partAttempt = part.attempt ?? 0
    if (partStep > step) [step, attempt] = [partStep, partAttempt]
    else if (partStep === step && partAttempt > attempt) attempt = partAttempt
  }
  return { step, attempt }
}

/** A session's messages split at a turn's first one: the history before it, and the turn's own. */
function splitAtTurn(messages: MessageWithParts[], turnId: string): { before: MessageWithParts[]; own: MessageWithParts[] } {
  const first = messages.findIndex((m) => m.info.turnId === turnId)
  return first < 0 ? { before: messages, own: [] } : { before: messages.slice(0, first), own: messages.slice(first) }
}

const isAssistantAnswer = (m: MessageWithParts) => m.info.role === 'assistant' && !m.info.summary

/**
 * The assistant messages of a turn among a session's messages (what `restore` makes the
 * scope's `assistantMessages()`): recovery closes the work open in the last one.
 */
export function turnAssistants(messages: MessageWithParts[], turnId: string): MessageWithParts[] {
  return splitAtTurn(messages, turnId).own.filter(isAssistantAnswer)
}
