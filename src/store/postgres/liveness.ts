/**
 * Engines' liveness kept by PostgreSQL itself: an engine holds a session-level advisory lock,
 * keyed by its owner id, on its listening connection (notifications.ts). The server ends the
 * lock the moment that connection ends: the process died (a SIGKILL, a crash, a host that went
 * away, once TCP keepalive says so), so any engine on any host sees that owner gone at once,
 * without waiting for the owner's leases to run out. Only owners that say they hold it
 * (`livenessOwner`, ../liveness-owner.ts) are read so: an engine of a version before it, or whose
 * listener could not connect, is waited for by its leases as before. A pooler that hides
 * sessions (PgBouncer in transaction mode) cannot keep such a lock: the listening connection
 * needs a session of its own, as LISTEN does.
 */

/** The locks' first key: turnchart's namespace (`'turn'` in ASCII), so an app's own advisory locks never collide. The second: the server's `hashtext` of the owner id. */
const namespace = 0x7475726e

/** The lock of `owner`, a condition on the row of pg_locks `l` (this database's, granted). */
const lockOf = (owner: string) =>
  `l.locktype = 'advisory' and l.granted and l.classid::int4 = ${namespace} and l.objsubid = 2 and l.objid::int4 = hashtext(${owner}) and l.database = (select oid from pg_database where datname = current_database())`

/** Holds the lock of the owner `$1` (`try`: a lock its own older connection still holds is held all the same). */
export const holdLivenessSql = `select pg_try_advisory_lock(${namespace}, hashtext($1))`

/** Which of the owners `$1` (a text array) hold their lock now. */
export const liveOwnersSql = `select o as owner from unnest($1::text[]) as o where exists (select 1 from pg_locks l where ${lockOf('o')})`

/**
 * The owners of unfinished turns in `table` (schema-qualified) whose leases still hold but whose
 * liveness the server ended: `$1` this engine's own owner id, `$2` now (ms).
 */
export const goneOwnersSql = (table: string) =>
  `select distinct t.owner from ${table} t where t.outcome is null and t.owner like '%:live' and t.owner <> $1 and t.lease_until >= $2 and not exists (select 1 from pg_locks l where ${lockOf('t.owner')})`
