/**
 * PostgreSQL: a model's circuit is read before a request only when it may have changed. Another
 * engine's change of a circuit notifies (`m:<model>`, migration 0023); while the engine's
 * listener hears, the store's `circuits.changeMark` moves with what it heard, and
 * `ModelCircuits.admit` reads the row again only then. While it does not listen, every request
 * reads. A rate limit's count of admitted requests notifies nothing. Real PostgreSQL, a schema of
 * its own; the statements counted by a Kysely plugin on the engine side's store.
 */
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely'
import { ModelCircuits } from '../../src/llm/model-circuits'
import { afterFailure } from '../../src/llm/circuit-rule'
import { postgresBackend } from '../../src/store/postgres/postgres-backend'
import { KyselyStore } from '../../src/store/kysely/kysely-store'
import { migrate } from '../../src/store/migrations'
import type { OpenedDatabase } from '../../src/store/backend'
import type { StoreChange, StoreNotifications } from '../../src/store/store-notifications'
import type { CircuitRecord } from '../../src/store/store'
import { dropSchemas, freshSchemaName, pgBaseUrl, postgresOnly, withParams } from '../support/harness'

/** Counts the reads of `turnchart_circuits` that reach the database. */
class CircuitReads implements KyselyPlugin {
  count = 0
  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    if (node.kind === 'SelectQueryNode' && JSON.stringify(node.from).includes('turnchart_circuits')) this.count++
    return node
  }
  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result
  }
}

const options = { failureThreshold: 2, windowMs: 60_000, openMs: 30_000 }
const origin = { sessionId: 'ses_1', turnId: 'trn_1' }

let schema: string
const opened: OpenedDatabase[] = []
let notifications: StoreNotifications | undefined
afterEach(async () => {
  await notifications?.close()
  notifications = undefined
  for (const database of opened.splice(0)) await database.close()
  if (schema) await dropSchemas(schema)
})

async function open(url: string): Promise<OpenedDatabase> {
  const database = postgresBackend.open(url, {}) as OpenedDatabase
  opened.push(database)
  await migrate(database.db, database.sql)
  return database
}

/** Resolves with the `times`th change `notifications` hears that `pick` accepts. */
function heard(from: StoreNotifications, pick: (change: StoreChange) => boolean, times = 1): Promise<StoreChange> {
  let left = times
  return new Promise((resolve) => {
    const stop = from.subscribe((change) => pick(change) && --left === 0 && (stop(), resolve(change)))
  })
}

postgresOnly('a circuit is read again only after the listener heard it change; while it does not listen, every request reads', async () => {
  schema = freshSchemaName()
  const url = withParams(pgBaseUrl, { schema })
  const here = await open(url)
  const reads = new CircuitReads()
  const store = new KyselyStore(here.db.withPlugin(reads), undefined, undefined, here.changes)
  let reported!: () => void
  const outage = new Promise<void>((resolve) => (reported = resolve))
  const listener = (notifications = await here.listen!(url, 'database', { onError: () => reported(), redact: (text) => text }))
  expect(listener.listening).toBe(true)
  const circuits = new ModelCircuits(store.circuits!, options)

  // Nothing changed since the first read: no more reads.
  for (let i = 0; i < 3; i++) expect(await circuits.admit('primary')).toEqual({ send: true })
  expect(reads.count).toBe(1)

  // Another engine (its own store, no listener) opens the circuit: heard, read once, refused.
  const elsewhere = new KyselyStore((await open(url)).db)
  const other = new ModelCircuits(elsewhere.circuits!, options)
  // (each failure is a change: the first counted, the second opening it)
  const opening = heard(listener, (c) => c.kind === 'circuit' && c.model === 'primary', 2)
  await other.failed('primary', origin)
  await other.failed('primary', origin)
  await opening
  await expect(circuits.admit('primary')).resolves.toMatchObject({ send: false })
  await expect(circuits.admit('primary')).resolves.toMatchObject({ send: false })
  expect(reads.count).toBe(2)

  // A rate limit's count of admitted requests changes no decision: it notifies nothing (the next
  // change heard is the other model's, written after it).
  const primary = (await elsewhere.circuits!.get('primary'))!
  const counted: CircuitRecord = { ...primary, admitted: [{ second: 1_000, requests: 1, tokens: 10 }], version: primary.version + 1 }
  const next = heard(listener, (c) => c.kind === 'circuit')
  expect(await elsewhere.circuits!.put(counted)).toBe(true)
  expect(await elsewhere.circuits!.put(afterFailure(undefined, 'backup', Date.now(), options)!)).toBe(true)
  expect(await next).toEqual({ kind: 'circuit', model: 'backup' })

  // The listener's connection ended: nobody can tell, each request reads; once it listens again, one read, then none.
  const before = reads.count
  const { Client } = await import('pg')
  const admin = new Client({ connectionString: pgBaseUrl })
  await admin.connect()
  await admin.query('select pg_terminate_backend($1)', [listener.backendPid])
  await admin.end()
  await outage
  expect(listener.listening).toBe(false)
  await circuits.admit('primary')
  await circuits.admit('primary')
  expect(reads.count).toBe(before + 2)
  expect(await listener.whenListening(10_000)).toBe(true)
  await circuits.admit('primary')
  await circuits.admit('primary')
  expect(reads.count).toBe(before + 3)
})
