/**
 * The session that holds an engine's liveness on PostgreSQL (liveness.ts): a `pg` client of its
 * own on the database's URL. Not a pooled connection (it goes back to the pool, and a pool of one
 * would be spent), not the listening connection (a listener held down on its own network path
 * must not say its engine died). It takes the owner's lock on each connect, checks itself each
 * beat (a `select 1` that must answer within it) and connects again with backoff; the reads of
 * other engines' liveness go through it.
 */
import type { EngineLiveness } from '../backend'
import { quoteIdentifier } from './notify-triggers'
import { goneOwnersSql, holdLivenessSql, liveOwnersSql } from './liveness'
import { pgLoader } from './open-postgres'

/** What this module uses of a `pg` Client. */
interface PgClient {
  connect(): Promise<void>
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>
  end(): Promise<void>
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown
  removeAllListeners(): unknown
  readonly connection?: { stream?: { unref?(): void } }
}

type PgClientClass = new (config: Record<string, unknown>) => PgClient

export interface LivenessOptions {
  connectionString: string
  /** The schema of turnchart's tables (the turns the gone owners are read from). */
  schema: string
  /** The marked owner id (liveness-owner.ts) whose lock the session holds. */
  owner: string
  /** The self-check's period and bound. Default 2000. */
  beatMs?: number
}

/** Opens the session; resolves once its first attempt is known (`held`: the lock taken). */
export async function holdLiveness(options: LivenessOptions): Promise<EngineLiveness> {
  const session = new LivenessSession(options)
  await session.ready
  return session
}

class LivenessSession implements EngineLiveness {
  readonly ready: Promise<void>
  readonly #options: LivenessOptions
  readonly #Client: PgClientClass
  readonly #beat: NodeJS.Timeout
  #client: PgClient | undefined
  #held = false
  #closed = false
  #failures = 0
  #retry: NodeJS.Timeout | undefined

  constructor(options: LivenessOptions) {
    this.#options = options
    this.#Client = (pgLoader.load() as unknown as { Client: PgClientClass }).Client
    this.#beat = setInterval(() => this.#check(), options.beatMs ?? 2000)
    this.#beat.unref()
    this.ready = this.#connect()
  }

  get owner(): string {
    return this.#options.owner
  }

  get held(): boolean {
    return this.#held
  }

  async liveOwners(owners: readonly string[]): Promise<ReadonlySet<string>> {
    return new Set((await this.#query(liveOwnersSql, [owners])).map((row) => row.owner as string))
  }

  async goneOwners(except: string): Promise<string[]> {
    const rows = await this.#query(goneOwnersSql(`${quoteIdentifier(this.#options.schema)}.turnchart_turns`), [except, Date.now()])
    return rows.map((row) => row.owner as string)
  }

  async close(): Promise<void> {
    this.#closed = true
    this.#held = false
    clearInterval(this.#beat)
    clearTimeout(this.#retry)
    const last = this.#client
    this.#client = undefined
    last?.removeAllListeners()
    last?.on('error', () => undefined)
    await last?.end().catch(() => undefined)
  }

  async #query(text: string, values: unknown[]): Promise<Array<Record<string, unknown>>> {
    const current = this.#client
    if (!current || !this.#held) throw new Error('the liveness session is down')
    return (await current.query(text, values)).rows
  }

  async #connect(): Promise<void> {
    if (this.#closed) return
    const beatMs = this.#options.beatMs ?? 2000
    let next: PgClient
    try {
      next = new this.#Client({ connectionString: this.#options.connectionString, application_name: 'turnchart liveness', keepAlive: true, connectionTimeoutMillis: beatMs, query_timeout: beatMs })
    } catch {
      // (a client that cannot even be made, its process tearing down: tried again later, never thrown out of a timer)
      return this.#retryLater()
    }
    this.#client = next
    next.on('error', () => this.#fail(next))
    next.on('end', () => this.#fail(next))
    try {
      await next.connect()
      next.connection?.stream?.unref?.()
      await next.query(holdLivenessSql, [this.#options.owner])
      if (next !== this.#client || this.#closed) return void next.end().catch(() => undefined)
      this.#held = true
      this.#failures = 0
    } catch {
      this.#fail(next)
    }
  }

  /** The beat: a silent or broken session is ended and opened again. */
  #check(): void {
    const current = this.#client
    if (current && this.#held) current.query('select 1').catch(() => this.#fail(current))
  }

  #fail(client: PgClient): void {
    if (client !== this.#client || this.#closed) return
    this.#held = false
    this.#client = undefined
    client.removeAllListeners()
    client.on('error', () => undefined)
    void client.end().catch(() => undefined)
    this.#retryLater()
  }

  /** Connects again after a backoff (100 ms doubling, at most 5 s); the timer holds no process open. */
  #retryLater(): void {
    const delay = Math.min(100 * 2 ** this.#failures++, 5000)
    this.#retry = setTimeout(() => void this.#connect(), delay)
    this.#retry.unref()
  }
}
