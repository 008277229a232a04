/**
 * Rows for the conformance suite: valid sessions, messages, parts, turns and the like, with
 * time-sortable ids (made in the order of the calls, so a test can insert them out of order),
 * big millisecond times (beyond a 32-bit integer: PostgreSQL's bigint columns), and strings
 * that JSON and SQL handle badly when they are handled wrong.
 */
import { newId } from '../../core/ids'
import type { MessageInfo, SessionInfo, TextPart, ToolPart, TransitionRecord, TurnRecord } from '../../core/types'
import type { ControlRequest, QueuedPromptRecord, Store } from '../../store/store'

/** Later than 2^31 ms and 2^32 ms: a bigint column, returned as a number. */
export const big = 1_795_000_000_123

/** Text that is itself JSON, or has what escapes get wrong: stored and returned as the same string. */
export const awkwardStrings = [
  '{"looks":"like json","n":1}',
  '[1,2,3]',
  '"a quoted string"',
  'null',
  'true',
  '42',
  'emoji 👩🏽‍💻 🚀 and flags 🇫🇷',
  'ünïcödé — “quotes” ‘single’ «guillemets» 日本語 עברית العربية',
  'line\nbreak\r\ntab\tbackslash\\ slash/ quote" apostrophe\'',
  'separators \u2028 \u2029 and a BOM \ufeff',
  "'; drop table turnchart_sessions; --",
  '$1 ? :name @p0 %s',
  'astral 𝄞 𠜎 and combining e\u0301',
]

export function session(overrides: Partial<SessionInfo> = {}): SessionInfo {
  return { id: newId('ses'), title: null, time: { created: big, updated: big }, ...overrides }
}

export function message(sessionId: string, overrides: Partial<MessageInfo> = {}): MessageInfo {
  return { id: newId('msg'), sessionId, role: 'user', time: { created: big }, ...overrides }
}

export function textPart(m: MessageInfo, text = 'hello', overrides: Partial<TextPart> = {}): TextPart {
  return { id: newId('prt'), sessionId: m.sessionId, messageId: m.id, type: 'text', text, time: { start: big }, ...overrides }
}

export function toolPart(m: MessageInfo, overrides: Partial<ToolPart> = {}): ToolPart {
  return {
    id: newId('prt'),
    sessionId: m.sessionId,
    messageId: m.id,
    step: 1,
    attempt: 1,
    type: 'tool',
    callId: 'call_1',
    tool: 'read',
    state: { status: 'completed', input: { path: '/tmp/x' }, output: { lines: ['a', 'b'], ok: true }, time: { start: big, end: big + 1 } },
    ...overrides,
  }
}

export function turn(sessionId: string, overrides: Partial<TurnRecord> = {}): TurnRecord {
  return {
    id: newId('trn'),
    sessionId,
    state: 'idle',
    outcome: null,
    step: 0,
    attempt: 0,
    retryAt: null,
    error: null,
    time: { created: big, updated: big },
    owner: null,
    leaseUntil: null,
    ...overrides,
  }
}

export function transition(turnId: string, seq: number, overrides: Partial<TransitionRecord> = {}): TransitionRecord {
  return { turnId, seq, from: `s${seq - 1}`, event: 'e', to: `s${seq}`, payload: { seq }, time: big + seq, ...overrides }
}

export function queued(sessionId: string, overrides: Partial<QueuedPromptRecord> = {}): QueuedPromptRecord {
  return { id: newId('trn'), sessionId, input: [{ type: 'text', text: 'later' }], options: { model: 'fast', temperature: 0.2 }, time: { created: big }, ...overrides }
}

export function control(turnId: string, overrides: Partial<ControlRequest> = {}): ControlRequest {
  return { id: newId('ctl'), turnId, kind: 'approve', callId: 'call_1', reason: null, createdAt: big, ...overrides }
}

/** A session with a turn in it, stored: what most turn, transition and control tests start from. */
export async function sessionWithTurn(store: Store, overrides: Partial<TurnRecord> = {}, input: unknown = { prompt: 'hi' }) {
  const s = session()
  await store.sessions.insert(s)
  const t = turn(s.id, overrides)
  await store.turns.insert(t, input)
  return { session: s, turn: t }
}

/** Resolves with the error `promise` rejects with (fails the test if it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`)
    },
    (error: unknown) => error as Error,
  )
}

/** A promise with its resolve at hand: a gate a test opens. */
export function deferred<T = void>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/**
 * Whether `promise` settled within `turns` turns of the event loop (each a `setImmediate`, so
 * I/O callbacks run between them): a way to say "it is still waiting" without sleeping.
 */
export async function settlesWithin(promise: Promise<unknown>, turns = 20): Promise<boolean> {
  let settled = false
  promise.then(
    () => (settled = true),
    () => (settled = true),
  )
  for (let i = 0; i < turns && !settled; i++) await new Promise((resolve) => setImmediate(resolve))
  return settled
}

export { newId }
