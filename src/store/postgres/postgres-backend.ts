/**
 * The PostgreSQL backend on `pg`: a `postgres://` or `postgresql://` URL, or a caller's Kysely
 * instance on Kysely's PostgresDialect. Its capabilities: notifications (LISTEN/NOTIFY on a
 * connection of the engine's own), the circuits' change mark it feeds (heard-circuits.ts), the
 * schema, read-only opening, and group commit for the transactions that allow it (interval
 * flushes: the others run at once on the pool). No online backup (that is `pg_dump`'s job).
 */
import type { Kysely } from 'kysely'
import { InvalidOptionError } from '../../core/errors'
import type { ListenerHooks, OpenedDatabase, StoreBackend } from '../backend'
import { isKyselyOn } from '../kysely/kysely-instance'
import { redactUrl } from '../redact-url'
import type { TurnchartDatabase } from '../schema'
import { GroupCommit, kyselyBatches } from '../group-commit'
import { TableChanges } from '../table-changes'
import { HeardCircuits } from './heard-circuits'
import { listenForChanges } from './notifications'
import { holdLiveness } from './liveness-session'
import { isPostgresUrl, openPostgres, postgresConnection } from './open-postgres'
import { postgresDialect } from './postgres-dialect'
import { storeSchema } from './store-schema'

export const postgresBackend: StoreBackend = {
  name: 'postgres',
  accepts: (database) => (typeof database === 'string' && isPostgresUrl(database)) || isKyselyOn(database, 'postgres'),
  open(database, settings) {
    const opened: OpenedDatabase =
      typeof database === 'string'
        ? openPostgres(database, { idleInTransactionTimeoutMs: settings.idleInTransactionTimeoutMs })
        : // The caller's: it stays open.
          { db: database as Kysely<TurnchartDatabase>, sql: postgresDialect, schema: () => storeSchema(database as Kysely<TurnchartDatabase>), close: async () => {} }
    // (liveness on a session of its own needs the URL: a caller's Kysely instance has none to give)
    const liveness = typeof database === 'string' ? { holdLiveness: (owner: string) => livenessOn(opened.db, database, owner) } : {}
    // The circuits are read again when the listener heard one change; the queue every time (a
    // steer must reach the next step boundary, and a notification may come a little after it).
    const heard = new HeardCircuits()
    return {
      ...opened,
      changes: { circuits: new TableChanges(() => heard.figure()) },
      // Only the transactions that allow it (streamed text's interval flushes): the others run at once on the pool.
      groupCommit: () => new GroupCommit(kyselyBatches(opened.db), { joins: 'shared' }),
      listen: async (url, option, hooks) => heard.follow(await listen(opened.db, url, option, hooks)),
      ...liveness,
    }
  },
  listensOn: isPostgresUrl,
  readOnly: {
    accepts: isPostgresUrl,
    label: redactUrl,
    exists: () => true,
    // A round trip to the server per poll.
    pollMs: 250,
    open: (location) => openPostgres(location, { readOnly: true }),
  },
}

/** The engine's liveness held on a session of its own on the database's URL. */
async function livenessOn(db: Kysely<TurnchartDatabase>, url: string, owner: string) {
  const { connectionString } = postgresConnection(url, {}, 'database')
  return holdLiveness({ connectionString, schema: await storeSchema(db), owner })
}

/** The listener on `url`, on the schema of `db`'s tables; its first attempt awaited (a failure is reported and it retries on). */
async function listen(db: Kysely<TurnchartDatabase>, url: string, option: 'notifications' | 'database', hooks: ListenerHooks) {
  // The option's own name in errors: a bad URL given as `notifications` is that option's fault.
  const { connectionString } = postgresConnection(url, {}, option)
  const schema = await storeSchema(db)
  let notifications
  try {
    notifications = listenForChanges({ connectionString, schema, label: redactUrl(url), ...hooks })
  } catch (error) {
    if ((error as { code?: string }).code === 'MODULE_NOT_FOUND') {
      throw new InvalidOptionError('notifications', redactUrl(url), 'a URL to listen on with the optional peer dependency `pg` installed (`npm install pg`), or false')
    }
    throw error
  }
  await notifications.ready
  return notifications
}
