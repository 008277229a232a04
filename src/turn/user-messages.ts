/**
 * What the user's side writes into a turn, each in a fenced transaction and through an outage:
 * its prompt (with the turn's first row, in one transaction), the messages steered into the
 * session while it runs, and a refused structured answer sent back to the model. Each joins the
 * turn's messages in memory once stored, and is published as a message of the turn.
 */
import type { PartOrigin } from '../core/bus'
import { StorageError, TurnchartError } from '../core/errors'
import { newId } from '../core/ids'
import type { MessageInfo, MessageWithParts, Part, UserPartDraft } from '../core/types'
import { OutageRetry } from '../store/outage'
import type { Store, TurnFence } from '../store/store'
import type { TurnConfig } from './turn-config'
import type { FirstRowWriter, PromptTransaction } from './turn-log/turn-log'
import type { TurnMessages } from './turn-messages'
import type { TurnOutages } from './turn-outages'
import type { TurnPartStream } from './turn-stream'
import type { WriteQueue } from './write-queue'

/** The turn the user's messages are written into. */
export interface UserMessagesTurn {
  readonly turnId: string
  readonly sessionId: string
  readonly store: Store
  readonly fence: TurnFence
  readonly queue: WriteQueue
  readonly events: Pick<TurnPartStream, 'message' | 'part'>
  readonly messages: Pick<TurnMessages, 'joined' | 'historyBefore'>
  readonly outages: Pick<TurnOutages, 'policy' | 'through'>
  /** Sets the turn's configuration (resolved in the prompt's transaction). */
  configure(config: TurnConfig): void
}

export class UserMessages {
  readonly #turn: UserMessagesTurn
  readonly #steersStored: (() => Promise<void>) | undefined
  /** The queue's change mark when a read last found no steer (`QueueStore.changeMark`): while it holds, there is none to read. */
  #noSteersAt: string | number | undefined

  /** `steersStored` resolves once the steers this engine is storing for the session are stored (one sent before a model call is in it). */
  constructor(turn: UserMessagesTurn, steersStored?: () => Promise<void>) {
    this.#turn = turn
    this.#steersStored = steersStored
  }

  /**
   * Stores the user's prompt (text, or text, image and file parts) and loads the history the
   * model needs, in one transaction. `prepare` runs first in that transaction (it locks the
   * session, inserts the turn row) and resolves the turn's configuration; `firstRow`, last,
   * writes the turn's first transition there too.
   */
  async storePrompt(prompt: string | UserPartDraft[], prepare: (tx: Store) => Promise<TurnConfig>, firstRow?: FirstRowWriter): Promise<void> {
    const turn = this.#turn
    const message = userMessage(turn, typeof prompt === 'string' ? [{ type: 'text', text: prompt }] : prompt, Date.now())
    const transaction: PromptTransaction = async (write) => {
      // Tried again through an outage until the first row's write starts (it sends the turn its
      // first event: what follows a failure there is the turn log's).
      let writing = false
      const store = () =>
        turn.store.transaction(async (tx) => {
          // (set here: the first row, written in this transaction, reads the redactor)
          turn.configure(await prepare(tx))
          turn.messages.historyBefore(await tx.messages.list(turn.sessionId, { fromLatestSummary: true }))
          await storeMessage(tx, message)
          writing = write !== undefined
          await write?.(tx)
        })
      await new OutageRetry(turn.outages.policy)
        .run('storing the prompt', store, () => !writing)
        .catch((error: unknown) => {
          // A driver's error (a killed connection, a full disk) named for what failed; the
          // engine's own refusals (a busy or unknown session) stay as they are.
          throw TurnchartError.isTurnchartError(error) ? error : new StorageError('storing the prompt', error)
        })
      // In the history once stored, before the first rows are known committed: the first step
      // reads it as soon as it may act.
      turn.messages.joined(message)
    }
    // Inside the queue's job: a write queued meanwhile runs after the first row is known committed.
    const publishFirstRow = await turn.queue.run(() => (firstRow ? firstRow(transaction) : transaction().then(() => undefined)))
    this.#publish(message, 'prompt')
    publishFirstRow?.()
  }

  /**
   * Takes the messages steered into the session (`engine.steer`, from any engine) into this
   * turn, before a model call: each stored as a user message of this turn, in the same
   * transaction that takes it from the queue (fenced), in the order they were sent. The next
   * parts go to a new assistant message after them. Returns how many were taken (none: nothing
   * was written; the check is one read, none while the store's queue mark says nothing was
   * queued since the last read found none).
   */
  async takeSteered(): Promise<number> {
    const turn = this.#turn
    await this.#steersStored?.()
    const mark = turn.store.queue.changeMark?.()
    if (mark !== undefined && mark === this.#noSteersAt) return 0
    if (!(await turn.outages.through('reading the steers', () => turn.store.queue.list(turn.sessionId))).some((q) => q.kind === 'steer')) {
      this.#noSteersAt = mark
      return 0
    }
    this.#noSteersAt = undefined
    // (run again through an outage: a take whose commit was lost with its connection but landed
    // leaves nothing to take, and its messages are in the database, not yet in this turn's memory)
    const taken = await this.#fenced('taking the steers', async (tx) => {
      const messages = (await tx.queue.takeSteers(turn.sessionId)).map((steer) => userMessage(turn, steer.input, Date.now()))
      for (const message of messages) await storeMessage(tx, message)
      return messages
    })
    for (const message of taken) this.#joined(message, 'steer')
    return taken.length
  }

  /**
   * Structured output: stores a user message of this turn that sends a refused answer back to
   * the model (fenced, as a steer is), and opens a new assistant message after it. Published as
   * a message that joined the running turn (origin `steer`).
   */
  async askAgain(text: string): Promise<void> {
    const message = userMessage(this.#turn, [{ type: 'text', text }], Date.now())
    await this.#fenced('asking the model again', (tx) => storeMessage(tx, message))
    this.#joined(message, 'steer')
  }

  /** A transaction of the turn's after its fence is checked, in its write queue, through an outage. */
  #fenced<T>(operation: string, write: (tx: Store) => Promise<T>): Promise<T> {
    const turn = this.#turn
    return turn.queue.run(() =>
      turn.outages.through(operation, () =>
        turn.store.transaction(async (tx) => {
          await tx.turns.checkFence(turn.turnId, turn.fence)
          return write(tx)
        }),
      ),
    )
  }

  #joined(message: MessageWithParts, origin: PartOrigin): void {
    this.#turn.messages.joined(message)
    this.#publish(message, origin)
  }

  #publish(message: MessageWithParts, origin: PartOrigin): void {
    this.#turn.events.message(message.info, origin)
    for (const part of message.parts) this.#turn.events.part(part)
  }
}

/** A user message of the turn holding `drafts` (not stored yet). */
function userMessage(turn: { turnId: string; sessionId: string }, drafts: UserPartDraft[], now: number): MessageWithParts {
  const { turnId, sessionId } = turn
  const info: MessageInfo = { id: newId('msg', now), sessionId, role: 'user', turnId, time: { created: now } }
  const parts = drafts.map((draft) => ({ ...draft, id: newId('prt', now), sessionId, messageId: info.id, time: { start: now, end: now } }) as Part)
  return { info, parts }
}

const storeMessage = async (tx: Store, message: MessageWithParts): Promise<void> => {
  await tx.messages.upsert(message.info)
  await tx.messages.upsertParts(message.parts, message.info.time.created)
}
