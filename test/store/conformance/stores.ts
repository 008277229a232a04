/**
 * The conformance suite (`storeConformance` of turnchart/testing, src/testing/store-conformance)
 * on the project's stores, as LangGraph.js's checkpoint-validation does it: one initializer per
 * implementation of the contract (store.ts), each aggregate's cases written once against
 * `Store` and run on every one of them, one test file per aggregate. Each case gets a fresh,
 * empty store.
 *
 * - memory: a `MemoryStore`.
 * - sqlite: the Kysely store on a real temporary SQLite file, opened and migrated as the engine
 *   opens it (group commit, statement cache, shared connection: `openStore`).
 * - postgres: the Kysely store on a fresh schema of the test server (`TURNCHART_PG_URL`), dropped
 *   after the test. Skipped, with a line saying so, when jest.config.js found no server.
 */
import fs from 'node:fs'
import path from 'node:path'
import { openStore } from '../../../src/engine/open-store'
import { MemoryStore } from '../../../src/store/memory/memory-store'
import type { Store } from '../../../src/store/store'
import { storeConformance, type StoreInitializer } from '../../../src/testing'
import { dropSchemas, freshSchemaName, pgBaseUrl, postgresAnswers, tempDbPath, withParams } from '../../support/harness'
import { itPostgres, postgres } from '../../support/requires'

export type StoreName = 'memory' | 'sqlite' | 'postgres'

interface ProjectStore extends StoreInitializer {
  name: StoreName
  /** Checked once before the suite's tests; throws to say why they cannot run. */
  beforeAll?(): Promise<void>
}

/** What disposing of each store made takes: its close, its file or schema removed. */
const disposals = new Map<Store, () => Promise<void>>()
const destroy = async (store: Store) => {
  await disposals.get(store)?.()
  disposals.delete(store)
}

export const initializers: ProjectStore[] = [
  {
    name: 'memory',
    serialises: true,
    create: async () => new MemoryStore(),
    destroy: async () => {},
  },
  {
    name: 'sqlite',
    serialises: true,
    async create() {
      const file = tempDbPath()
      const opened = await openStore(file)
      disposals.set(opened.store, async () => {
        await opened.close()
        fs.rmSync(path.dirname(file), { recursive: true, force: true })
      })
      return opened.store
    },
    destroy,
  },
  {
    name: 'postgres',
    serialises: false,
    async beforeAll() {
      // The server was there when jest started; a wrong URL or database must fail, not skip.
      if (!(await postgresAnswers())) throw new Error(`no PostgreSQL server answers at ${pgBaseUrl}`)
    },
    async create() {
      const schema = freshSchemaName()
      const opened = await openStore(withParams(pgBaseUrl, { schema }))
      disposals.set(opened.store, async () => {
        await opened.close()
        await dropSchemas(schema)
      })
      return opened.store
    },
    destroy,
  },
]

/**
 * Runs the cases of `suite` on every store: `describe.each` over the initializers, each test
 * titled "<store>: <title>".
 *
 * @example
 * conformance('sessions')
 */
export function conformance(suite: string): void {
  describe.each(initializers.map((init) => [init.name, init] as const))(`${suite} (%s)`, (name, init) => {
    // Without a server (jest.config.js probes TURNCHART_PG_URL), PostgreSQL's tests are skipped
    // with the reason, or fail under CI=true.
    const skip = name === 'postgres' && !postgres.available
    if (!skip && init.beforeAll) beforeAll(() => init.beforeAll!())
    const cases = storeConformance(init).filter((c) => c.suite === suite)
    if (cases.length === 0) throw new Error(`no conformance case in suite ${suite}`)
    for (const c of cases) (name === 'postgres' ? itPostgres : test)(`${name}: ${c.title}`, c.run)
  })
}
