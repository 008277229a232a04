/**
 * The conformance suite's stores, as LangGraph.js's checkpoint-validation does it: one
 * initializer per implementation of the contract (store.ts), and each aggregate's suite written
 * once against `Store` and run on every one of them. Each test gets a fresh, empty store.
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
import { dropSchemas, freshSchemaName, pgBaseUrl, postgresAnswers, tempDbPath, withParams } from '../../support/harness'
import { itPostgres, postgres } from '../../support/requires'

export type StoreName = 'memory' | 'sqlite' | 'postgres'

export interface StoreInitializer {
  name: StoreName
  /**
   * Calls and transactions run one at a time (memory, SQLite's single connection): a call made
   * while a transaction runs waits for it. On PostgreSQL they run at once on the pool, isolated.
   */
  serialises: boolean
  /** Checked once before the suite's tests; throws to say why they cannot run. */
  beforeAll?(): Promise<void>
  /** A fresh, empty store and how to dispose of it. */
  create(): Promise<{ store: Store; dispose(): Promise<void> }>
}

export const initializers: StoreInitializer[] = [
  {
    name: 'memory',
    serialises: true,
    async create() {
      return { store: new MemoryStore(), dispose: async () => {} }
    },
  },
  {
    name: 'sqlite',
    serialises: true,
    async create() {
      const file = tempDbPath()
      const opened = await openStore(file)
      return {
        store: opened.store,
        async dispose() {
          await opened.close()
          fs.rmSync(path.dirname(file), { recursive: true, force: true })
        },
      }
    },
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
      return {
        store: opened.store,
        async dispose() {
          await opened.close()
          await dropSchemas(schema)
        },
      }
    },
  },
]

/** A test of the suite: its title (the store's name is put in front) and its body, given a fresh store. */
export type StoreTest = (title: string, body: (store: Store) => Promise<void>) => void

/**
 * Runs `specs` on every store: `describe.each` over the initializers, each test titled
 * "<store>: <title>" and handed a fresh store.
 *
 * @example
 * conformance('sessions', (it) => {
 *   it('a session comes back as inserted', async (store) => { ... })
 * })
 */
export function conformance(suite: string, specs: (it: StoreTest, store: StoreInitializer) => void): void {
  describe.each(initializers.map((init) => [init.name, init] as const))(`${suite} (%s)`, (name, init) => {
    // Without a server (jest.config.js probes TURNCHART_PG_URL), PostgreSQL's tests are skipped
    // with the reason, or fail under CI=true.
    const skip = name === 'postgres' && !postgres.available
    let current: { store: Store; dispose(): Promise<void> } | undefined
    if (!skip) {
      beforeAll(async () => init.beforeAll?.())
      beforeEach(async () => {
        current = await init.create()
      })
      afterEach(async () => {
        await current?.dispose()
        current = undefined
      })
    }
    const it: StoreTest = (title, body) => (name === 'postgres' ? itPostgres : test)(`${name}: ${title}`, () => body(current!.store))
    specs(it, init)
  })
}
