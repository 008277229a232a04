/**
 * The precompiled hot writes on turnchart's own SQLite connection run their statements on the
 * connection directly inside a transaction (sqlite/direct-statements.ts): what another
 * connection sees is the same as through Kysely's executor — nothing before the commit, nothing
 * of a transaction rolled back, a failing statement a rejection of its own query.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { openSqlite } from '../../src/store/sqlite/open-sqlite'
import { precompiledQuery } from '../../src/store/precompiled-query'
import { committedIds } from '../support/committed-ids'
import { sqliteOnly } from '../support/harness'
import type { OpenedDatabase } from '../../src/store/backend'

let dir: string
let file: string
let opened: OpenedDatabase

const touch = precompiledQuery(['id', 'at'], (db, v) => db.updateTable('turnchart_sessions').set({ updated_at: v.at as number }).where('id', '=', v.id as string))
const insertItem = precompiledQuery(['id'], (db, v) => db.insertInto('items' as never).values({ id: v.id } as never))

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-direct-'))
  file = path.join(dir, 'd.db')
  opened = openSqlite(file)
  await sql`create table items (id text primary key)`.execute(opened.db)
  await sql`create table turnchart_sessions (id text primary key, updated_at integer)`.execute(opened.db)
  await sql`insert into turnchart_sessions (id, updated_at) values ('s1', 1)`.execute(opened.db)
})

afterAll(async () => {
  await opened.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

/** The ids another connection sees: what is committed. */
const committed = () => committedIds(file)

sqliteOnly('a precompiled write in a transaction is seen by others only after its commit, with its result', async () => {
  const trx = await opened.db.startTransaction().execute()
  const result = await insertItem.execute(trx as never, { id: 'a' })
  expect(result.numAffectedRows).toBe(1n)
  const updated = await touch.execute(trx as never, { id: 's1', at: 2 })
  expect(updated.numAffectedRows).toBe(1n)
  // Seen inside the transaction (the same connection), not outside it.
  expect((await sql<{ id: string }>`select id from items`.execute(trx)).rows).toEqual([{ id: 'a' }])
  expect(committed()).toEqual([])
  await trx.commit().execute()
  expect(committed()).toEqual(['a'])
})

sqliteOnly('a rolled-back transaction leaves none of its precompiled writes; a failing statement rejects its query', async () => {
  const trx = await opened.db.startTransaction().execute()
  await insertItem.execute(trx as never, { id: 'b' })
  // 'a' exists: the primary key refuses it; the query's promise rejects (it does not throw at the call).
  const failing = insertItem.execute(trx as never, { id: 'a' })
  // (matched by its message: better-sqlite3's error class may come from another test file's realm)
  await expect(failing).rejects.toMatchObject({ message: expect.stringMatching(/UNIQUE/) })
  await trx.rollback().execute()
  expect(committed()).toEqual(['a'])
  // Outside a transaction the query runs through Kysely, and commits at once.
  await insertItem.execute(opened.db, { id: 'c' })
  expect(committed()).toEqual(['a', 'c'])
})
