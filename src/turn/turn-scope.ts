/**
 * Everything one turn's actors share: its ids, its configuration, its messages in memory
 * (`TurnMessages`), what the user writes into it (`UserMessages`), how it rides out an outage
 * (`TurnOutages`), the part writer and the write queue. The chart holds control data; this
 * holds the data.
 *
 * A scope has a lifecycle of its own: it is made with the turn's ids and its storage lane
 * (queue, writer), then either begun (`userMessages.storePrompt`: the prompt stored and the
 * turn's configuration resolved in one transaction) or restored (recovery, from the stored
 * rows). Its configuration is set there, once, and read by the actors only after that.
 */
import type { Bus } from '../core/bus'
import type { MessageWithParts } from '../core/types'
import type { SummaryScope } from '../compaction/summarize'
import type { StepScope } from '../llm/stream-step'
import type { OutagePolicy } from '../store/outage'
import type { Store, TurnFence } from '../store/store'
import type { ToolRunScope } from '../tools/run-tools'
import { PartWriter } from './part-writer'
import type { TurnConfig } from './turn-config'
import type { TurnLogScope } from './turn-log/turn-log'
import { TurnMessages } from './turn-messages'
import { TurnOutages } from './turn-outages'
import { TurnPartStream } from './turn-stream'
import { UserMessages } from './user-messages'
import { WriteQueue } from './write-queue'

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
  readonly queue = new WriteQueue()
  readonly writer: PartWriter
  /** What the turn publishes, once: its part stream (to the engine's bus, its readers, a late reader's replay). */
  readonly events: TurnPartStream
  readonly outages: TurnOutages
  readonly messages: TurnMessages
  readonly userMessages: UserMessages
  /** Structured output: the final answer's parsed object, set by the step gate when it matched the schema. */
  output: { value: unknown } | undefined
  #config: TurnConfig | undefined

  constructor(options: TurnScopeOptions) {
    const { turnId, sessionId, store, bus, fence, parentTurnId } = options
    this.turnId = turnId
    this.sessionId = sessionId
    this.parentTurnId = parentTurnId
    this.store = store
    this.fence = fence
    const events = (this.events = new TurnPartStream(bus, { turnId, sessionId, ...(parentTurnId ? { parentTurnId } : {}) }))
    const redact = <T>(error: T): T => (this.ready ? this.config.redactor.value(error) : error)
    this.outages = new TurnOutages({ turnId, sessionId, publish: (event) => events.publish(event), redact }, options.outage)
    this.writer = new PartWriter({
      store,
      queue: this.queue,
      // The store writes; the part stream tells what changed (it keeps the parts, and publishes
      // copies): it hears the writer itself, no relay between them.
      listener: events,
      flushIntervalMs: options.flushIntervalMs,
      now: () => Date.now(),
      fence: (tx) => tx.turns.checkFence(turnId, fence),
      outage: this.outages.policy,
    })
    this.messages = new TurnMessages({ turnId, sessionId }, this.writer)
    this.userMessages = new UserMessages(this, options.steersStored)
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

  /** Sets the turn's configuration, once: in its prompt's transaction, or when it is restored. */
  configure(config: TurnConfig): void {
    this.#config = config
  }

  /**
   * Rebuilds the scope of an interrupted turn from the database (recovery): its messages (see
   * `TurnMessages.restore`), and a reader of the resumed turn's stream gets what was stored
   * before the crash too.
   */
  restore(messages: MessageWithParts[], config: TurnConfig): void {
    this.configure(config)
    this.events.seed(this.messages.restore(messages))
  }
}
