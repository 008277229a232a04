/**
 * The node:sqlite backend as far as this Node runs it: the option's form and, on a Node older
 * than 22.13 (this suite's Node 20), the error that names `database.driver`. Its store, a turn,
 * a crash and the recovery run under Node 22 in the compatibility suite
 * (test/compat-v7/node-sqlite.test.mjs).
 */
import { createEngine, InvalidOptionError } from '../../src'
import { nodeHasSqlite } from '../../src/store/node-sqlite/node-sqlite-driver'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'

let server: ScriptedServer
beforeAll(async () => {
  server = await startScriptedServer()
})
afterAll(async () => {
  await server.close()
})

async function openError(database: unknown): Promise<unknown> {
  return createEngine({ database: database as never, model: modelFor(server) }).then(
    async (engine) => {
      await engine.close()
      return undefined
    },
    (error: unknown) => error,
  )
}

test('Node 22.13 is the first with node:sqlite as turnchart uses it', () => {
  expect([nodeHasSqlite('20.19.0'), nodeHasSqlite('22.12.0'), nodeHasSqlite('22.13.0'), nodeHasSqlite('22.23.5'), nodeHasSqlite('24.1.0')]).toEqual([false, false, true, true, true])
})

const olderNode = nodeHasSqlite() ? test.skip : test
olderNode(`on Node ${process.version}, { file, driver: 'node:sqlite' } is an InvalidOptionError naming database.driver and the Node it needs`, async () => {
  const error = await openError({ file: tempDbPath(), driver: 'node:sqlite' })
  expect(InvalidOptionError.isInstance(error)).toBe(true)
  expect(error).toMatchObject({ option: 'database.driver', value: JSON.stringify('node:sqlite') })
  expect((error as Error).message).toContain('22.13')
  expect((error as Error).message).toContain(process.version)
})

test('an unknown driver is refused naming database.driver; a key beside file, shared and driver naming itself', async () => {
  expect(await openError({ file: tempDbPath(), driver: 'sqlite3' })).toMatchObject({ name: 'InvalidOptionError', option: 'database.driver', value: JSON.stringify('sqlite3') })
  expect(await openError({ file: tempDbPath(), driver: 'node:sqlite', mode: 'wal' })).toMatchObject({ name: 'InvalidOptionError', option: 'database.mode' })
})
