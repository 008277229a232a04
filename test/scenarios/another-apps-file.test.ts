/**
 * `createEngine` on a SQLite file of another app (its tables, none of turnchart's) refuses it,
 * as the CLI does, and leaves it byte-for-byte as it was; `database: { file, shared: true }`
 * adds turnchart's tables beside the app's, after which both the engine and the CLI use it.
 * A new file, or one that already has turnchart's tables, opens as before.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { createEngine, InvalidOptionError, NotATurnchartDatabaseError } from '../../src'
import { runCli } from '../cli/run-cli'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'

let server: ScriptedServer
let file: string
beforeEach(async () => {
  server = await startScriptedServer()
  file = tempDbPath()
  const app = new Database(file)
  app.exec("create table users (id integer primary key, name text); insert into users values (1, 'ada')")
  app.close()
})
afterEach(async () => {
  await server.close()
  fs.rmSync(path.dirname(file), { recursive: true, force: true })
})

const tables = (db: string) => {
  const read = new Database(db, { readonly: true })
  try {
    return (read.prepare("select name from sqlite_master where type = 'table' order by name").all() as Array<{ name: string }>).map((t) => t.name)
  } finally {
    read.close()
  }
}
const folder = () => fs.readdirSync(path.dirname(file)).sort()
const hash = () => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex')

test("a path to another app's SQLite file is refused, naming the tables and the option, and the file is left as it was", async () => {
  const before = { hash: hash(), folder: folder() }
  const error = await createEngine({ database: file, model: modelFor(server) }).catch((e: unknown) => e)
  expect(NotATurnchartDatabaseError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ database: file })
  expect((error as Error).message).toBe(
    `${file} is not a turnchart database: it holds another app's tables (users) and none of turnchart's; to add turnchart's tables to it, pass database: { file: ${JSON.stringify(file)}, shared: true }`,
  )
  // Not converted to WAL, no table added, no -wal/-shm left: nothing was written.
  expect({ hash: hash(), folder: folder() }).toEqual(before)
  expect(tables(file)).toEqual(['users'])
  // The CLI says the same file is not turnchart's.
  const cli = await runCli(['sessions', file])
  expect(cli.code).toBe(1)
  expect(cli.stderr).toContain('is not a turnchart database')
})

test("{ file, shared: true } adds turnchart's tables beside the app's; then a path opens it too, and the CLI reads it", async () => {
  server.text('hello')
  const engine = await createEngine({ database: { file, shared: true }, model: modelFor(server) })
  const session = await engine.createSession({ title: 'beside users' })
  await engine.prompt(session.id, 'hi').done
  await engine.close()
  const names = tables(file)
  expect(names).toContain('users')
  expect(names.filter((name) => name.startsWith('turnchart_'))).toHaveLength(12)
  const app = new Database(file, { readonly: true })
  expect(app.prepare('select name from users').all()).toEqual([{ name: 'ada' }])
  app.close()

  // It has turnchart's tables now: a plain path opens it.
  const again = await createEngine({ database: file, model: modelFor(server) })
  expect((await again.listSessions()).map((s) => s.title)).toEqual(['beside users'])
  await again.close()
  const cli = await runCli(['sessions', file, '--json'])
  expect(cli.stderr).toBe('')
  expect(JSON.parse(cli.stdout).map((s: { id: string }) => s.id)).toEqual([session.id])
})

test('a new file and an empty file open as before', async () => {
  for (const db of [path.join(path.dirname(file), 'new.db'), path.join(path.dirname(file), 'empty.db')]) {
    if (db.endsWith('empty.db')) fs.writeFileSync(db, '')
    const engine = await createEngine({ database: db, model: modelFor(server) })
    await engine.createSession()
    await engine.close()
    expect(tables(db).filter((name) => name.startsWith('turnchart_'))).toHaveLength(12)
  }
})

test.each([
  ['database.file', { file: '' }],
  ['database.file', { file: 'postgres://u@h/db' }],
  ['database.file', { file: ':memory:' }],
  ['database.shared', { file: 'x.db', shared: 'yes' }],
  ['database.sharde', { file: 'x.db', sharde: true }],
])('a malformed { file, shared } is an InvalidOptionError naming %s', async (option, database) => {
  const error = await createEngine({ database: database as never, model: modelFor(server) }).catch((e: unknown) => e)
  expect(InvalidOptionError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ option })
})
