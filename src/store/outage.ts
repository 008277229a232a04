/**
 * Riding out a database outage. A write that fails for a reason that passes (the connection
 * lost or refused, the server shutting down or restarting, SQLite busy or locked past its busy
 * timeout, a full disk) is tried again, the same transaction, with backoff, until it succeeds or
 * the outage has lasted `outageMs`; then the failure is the caller's, as before. What the
 * process holds (a tool's result, streamed text) is written once the database answers, instead
 * of being left for a recovery to find in doubt.
 *
 * A retried transaction must be safe to run twice: one whose commit was lost with its connection
 * may have committed (the caller checks, e.g. the turn log by the sequence number of its rows).
 * A failure that says something about the write itself (a constraint, a fence, a budget) is
 * never retried.
 */

/** SQLSTATE codes of failures that pass: the connection (class 08), the server going down or starting (57P01–57P03), too many connections, a serialization failure or deadlock (the transaction was rolled back). */
const passingSqlStates = /^(08\d{3}|57P0[1-3]|53300|40001|40P01)$/
/** Node's codes of a connection that failed or was refused. */
const passingSystemCodes = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ENOTCONN', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'])
/** better-sqlite3's codes: busy or locked past the busy timeout, the disk full. */
const passingSqliteCodes = /^SQLITE_(BUSY|LOCKED|FULL)(_|$)/
/** node:sqlite's primary result codes: SQLITE_BUSY 5, SQLITE_LOCKED 6, SQLITE_FULL 13. */
const passingSqliteErrcodes = new Set([5, 6, 13])
/** node-postgres says a connection it lost in words, without a code. */
const passingMessages = /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Client was closed and is not queryable/i

function passes(error: { code?: unknown; errcode?: unknown; message?: unknown }): boolean {
  const { code } = error
  if (typeof code === 'string' && (passingSqlStates.test(code) || passingSystemCodes.has(code) || passingSqliteCodes.test(code))) return true
  if (code === 'ERR_SQLITE_ERROR' && typeof error.errcode === 'number' && passingSqliteErrcodes.has(error.errcode & 0xff)) return true
  return typeof error.message === 'string' && passingMessages.test(error.message)
}

/**
 * Whether `error` (or an error it was caused by, e.g. a `StorageError`'s cause) is a database
 * failure that passes: trying the same transaction again later may succeed.
 *
 * @example
 * isPassingFailure(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })) // true
 */
export function isPassingFailure(error: unknown): boolean {
  let current = error
  for (let depth = 0; depth < 6 && current !== null && typeof current === 'object'; depth++) {
    if (passes(current as { code?: unknown })) return true
    // (an AggregateError, as node-postgres gives for a refused connection to every address of a host)
    const errors = (current as { errors?: unknown }).errors
    if (Array.isArray(errors) && errors.some((inner) => inner !== null && typeof inner === 'object' && passes(inner))) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/** Who hears that writes wait on the database, and that they go on (the engine's counters and events). */
export interface OutageWatch {
  /** A write of `operation` failed for a reason that passes and waits to be tried again. */
  waiting(operation: string, cause: unknown): void
  /** That write went through after waiting (`waitedMs`), or gave up (`gaveUp`: the outage outlasted `outageMs`, or the failure no longer passes). */
  resumed(operation: string, outcome: { waitedMs: number; gaveUp: boolean }): void
}

/** Counts the writes waiting on the database now (`engine.stats().storageWaits`). */
export class StorageWaits implements OutageWatch {
  now = 0
  waiting(): void {
    this.now++
  }
  resumed(): void {
    this.now--
  }
}

export interface OutagePolicy {
  /** How long an outage is waited out, from its first failed write; 0: never. */
  outageMs: number
  watch?: OutageWatch
}

/** The first wait after a failure, then doubled up to `maxDelayMs`: a restart's seconds cost at most a second more. */
const firstDelayMs = 50
const maxDelayMs = 1000

/**
 * Runs writes through an outage, for one writer (a turn): the outage is timed from the first
 * failed write and ends with the next one that succeeds, so a write after a given-up one (the
 * turn's failure row) tries once instead of waiting out the outage again.
 *
 * @example
 * const writes = new OutageRetry({ outageMs: 30_000 })
 * await writes.run('recording the transition to tool-running', () => store.transaction(write))
 */
export class OutageRetry {
  #since: number | null = null

  constructor(private readonly policy: OutagePolicy) {}

  /** `mayRetry`: asked after a failure that passes, whether this attempt may be run again (false: it had an effect that must not be repeated). */
  async run<T>(operation: string, attempt: () => Promise<T>, mayRetry: () => boolean = () => true): Promise<T> {
    let waitedFrom: number | null = null
    for (let tries = 0; ; tries++) {
      try {
        const value = await attempt()
        this.#since = null
        if (waitedFrom !== null) this.policy.watch?.resumed(operation, { waitedMs: Date.now() - waitedFrom, gaveUp: false })
        return value
      } catch (error) {
        const now = Date.now()
        const passing = isPassingFailure(error) && mayRetry()
        if (passing) this.#since ??= now
        const left = this.#since === null ? 0 : this.#since + this.policy.outageMs - now
        if (!passing || left <= 0) {
          if (waitedFrom !== null) this.policy.watch?.resumed(operation, { waitedMs: now - waitedFrom, gaveUp: true })
          throw error
        }
        if (waitedFrom === null) {
          waitedFrom = now
          this.policy.watch?.waiting(operation, error)
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(left, firstDelayMs * 2 ** Math.min(tries, 5), maxDelayMs)))
      }
    }
  }
}
