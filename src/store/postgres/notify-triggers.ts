/**
 * What PostgreSQL pushes to the engines that listen (LISTEN/NOTIFY): triggers on turnchart's
 * tables that call `pg_notify` in the transaction that writes the row, so a notification is
 * delivered only once its row is committed, and never for a write that rolled back. Triggers
 * rather than a `NOTIFY` statement sent by the store: no extra round trip on the write path, and
 * every writer notifies (whatever it is and whoever runs it).
 *
 * One channel per schema (`notificationChannel`), payloads `<kind>:<id>`:
 * - `c:<turnId>`: a control request (approve, deny, abort) was stored for the turn;
 * - `h:<controlId>`: the engine running the turn handled that request;
 * - `s:<sessionId>`: the session's rows changed. Sent always when a turn ends and when a queued
 *   prompt leaves the queue (started, taken by a turn as a steer, cancelled); for every other
 *   write (parts, messages, a turn's transitions) only while someone watches the session
 *   (`turnchart_watches`, written by a listener following a turn run elsewhere);
 * - `r:<turnId>`: the unfinished turn was released by its owner (a handoff, a clean close):
 *   another engine may claim it now, and the first to hear it does;
 * - `m:<model>`: the model's circuit changed (a failure counted, opened, a probe taken or let go,
 *   closed, a hold): the engines read it again before their next request, and not before (a
 *   rate limit's count of admitted requests changes it on every request, and notifies nothing).
 *
 * Why the watch gate: PostgreSQL serialises the commits of transactions that notified (one
 * lock on the notification queue), so notifying every part flush of every turn would cost the
 * write path under concurrency for nobody's benefit. Turns nobody follows from another engine
 * notify once, at their end.
 */
import { createHash } from 'node:crypto'
import { sql, type Kysely } from 'kysely'

/** PostgreSQL's limit on a channel name (NAMEDATALEN - 1 bytes). */
const maxChannelBytes = 63

/**
 * The channel of the schema turnchart's tables are in: `turnchart_<schema>`, or, for a schema
 * name too long for a channel, `turnchart_<md5 of the name>`. Notifications go to every
 * listener of the database, so one channel per schema keeps stores in other schemas apart.
 *
 * @example
 * notificationChannel('agent') // 'turnchart_agent'
 */
export function notificationChannel(schema: string): string {
  const readable = `turnchart_${schema}`
  return Buffer.byteLength(readable) <= maxChannelBytes ? readable : `turnchart_${createHash('md5').update(schema).digest('hex')}`
}

/** `name` as a quoted SQL identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/** `text` as a SQL string literal (standard_conforming_strings, on since PostgreSQL 9.1). */
function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`
}

/** A function body dollar-quoted with a tag the body does not contain. */
function dollarQuoted(body: string): string {
  let tag = 'tc'
  for (let n = 1; body.includes(`$${tag}$`); n++) tag = `tc${n}`
  return `$${tag}$${body}$${tag}$`
}

/**
 * Creates the watch table, the trigger functions and the triggers in the current schema (the
 * migration's). The schema and the channel are written into the functions: a trigger then
 * needs no lookup by `search_path`, whichever connection writes.
 *
 * @example
 * await createNotifyTriggers(trx) // inside the migration transaction
 */
export async function createNotifyTriggers(db: Kysely<any>): Promise<void> {
  const { s, notify, watched } = await triggerParts(db)
  const statements = [
    // Sessions followed by a listener elsewhere (one row per session, no foreign key: a watch of
    // a deleted session is harmless and expires).
    `create table ${s}.turnchart_watches (session_id text collate "C" primary key, until bigint not null)`,
    fn(s, 'turnchart_notify_control', `if TG_OP = 'INSERT' then ${notify(`'c:' || NEW.turn_id`)} elsif NEW.handled_at is not null and OLD.handled_at is null then ${notify(`'h:' || NEW.id`)} end if;`),
    `create trigger turnchart_notify after insert or update of handled_at on ${s}.turnchart_controls for each row execute function ${s}.turnchart_notify_control()`,
    turnFunction(s, notify, watched),
    `create trigger turnchart_notify after insert or update on ${s}.turnchart_turns for each row execute function ${s}.turnchart_notify_turn()`,
    fn(s, 'turnchart_notify_watched', `if ${watched} then ${notify(`'s:' || NEW.session_id`)} end if;`),
    `create trigger turnchart_notify after insert or update on ${s}.turnchart_parts for each row execute function ${s}.turnchart_notify_watched()`,
    `create trigger turnchart_notify after insert or update on ${s}.turnchart_messages for each row execute function ${s}.turnchart_notify_watched()`,
    // A queued prompt left the queue: its turn started, a running turn took it (a steer), or it was cancelled.
    fn(s, 'turnchart_notify_dequeued', notify(`'s:' || OLD.session_id`)),
    `create trigger turnchart_notify after delete on ${s}.turnchart_queue for each row execute function ${s}.turnchart_notify_dequeued()`,
  ]
  for (const statement of statements) await sql.raw(statement).execute(db)
}

/**
 * Migration 0013: the turn trigger's function replaced by the one that also notifies a release
 * (`r:<turnId>`). A database made since has it from `createNotifyTriggers` already: replacing it
 * with the same body is harmless.
 *
 * @example
 * await notifyReleasedTurns(trx) // inside the migration transaction
 */
export async function notifyReleasedTurns(db: Kysely<any>): Promise<void> {
  const { s, notify, watched } = await triggerParts(db)
  await sql.raw(turnFunction(s, notify, watched, 'create or replace')).execute(db)
}

/**
 * Migration 0023: the circuits' trigger (`m:<model>`), on a change of what a circuit decides,
 * not of the requests a rate limit counted.
 *
 * @example
 * await notifyCircuits(trx) // inside the migration transaction
 */
export async function notifyCircuits(db: Kysely<any>): Promise<void> {
  const { s, notify } = await triggerParts(db)
  const decided = (row: string) => `(${['failures', 'since', 'open_until', 'probe_until', 'held_until'].map((c) => `${row}.${c}`).join(', ')})`
  const body = `if TG_OP = 'INSERT' or ${decided('OLD')} is distinct from ${decided('NEW')} then ${notify(`'m:' || NEW.model`)} end if;`
  await sql.raw(fn(s, 'turnchart_notify_circuit', body)).execute(db)
  await sql.raw(`create trigger turnchart_notify after insert or update on ${s}.turnchart_circuits for each row execute function ${s}.turnchart_notify_circuit()`).execute(db)
}

/** What the trigger functions are written with: the current schema, quoted, the notify statement and the watch test. */
async function triggerParts(db: Kysely<any>): Promise<{ s: string; notify: (payload: string) => string; watched: string }> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db)
  const schema = rows[0].schema
  const s = quoteIdentifier(schema)
  const notify = (payload: string) => `perform pg_notify(${quoteLiteral(notificationChannel(schema))}, ${payload});`
  // `until` is the database's clock in epoch ms (the writers' clocks may differ from it).
  const watched = `exists (select 1 from ${s}.turnchart_watches w where w.session_id = NEW.session_id and w.until > (extract(epoch from now()) * 1000)::bigint)`
  return { s, notify, watched }
}

/**
 * The turn trigger's function: a turn's end always (queued prompts and aborts from other
 * engines wait for it), its other changes while watched; and an unfinished turn whose owner
 * let it go (released: a handoff, a clean close), so that another engine takes it at once.
 */
function turnFunction(s: string, notify: (payload: string) => string, watched: string, create = 'create'): string {
  const ended = `if (TG_OP = 'UPDATE' and NEW.outcome is not null and OLD.outcome is null) or ${watched} then ${notify(`'s:' || NEW.session_id`)} end if;`
  const released = `if TG_OP = 'UPDATE' and NEW.outcome is null and OLD.owner is not null and NEW.owner is null then ${notify(`'r:' || NEW.id`)} end if;`
  return fn(s, 'turnchart_notify_turn', `${ended} ${released}`, create)
}

/** A trigger function running `body` (an after-trigger: its result is ignored). */
function fn(schema: string, name: string, body: string, create = 'create'): string {
  return `${create} function ${schema}.${name}() returns trigger language plpgsql as ${dollarQuoted(`begin ${body} return null; end`)}`
}
