/**
 * Backups: `engine.backup(file)` and `turnchart backup <db> <file>` (SQLite's online backup)
 * taken while a turn streams give a file that opens as a turnchart database with the rows the
 * turn had committed; an engine's `close()` moves the WAL into the file even while a reader
 * (`turnchart view`) keeps the database open, so a copy of the file alone holds everything;
 * PostgreSQL is pointed to pg_dump.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, InvalidArgumentError, InvalidOptionError, type Engine, type TurnchartEvent } from '../../src'
import { openReadOnlyStore } from '../../src/store/backends/read-only-store'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, withParams } from '../support/harness'
import { itPostgres } from '../support/requires'
import { runCli } from './run-cli'

jest.setTimeout(60_000)

let server: ScriptedServer
let dir: string
beforeEach(async () => {
  server = await startScriptedServer()
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-backup-'))
})
afterEach(async () => {
  await server.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const lookup = tool({ description: 'Look a word up', inputSchema: z.object({ word: z.string() }), execute: async ({ word }) => ({ meaning: `${word} means hello` }) })

/** A turn whose first step called `lookup` (committed) and whose second step is streaming, never ending. */
async function turnStreaming(engine: Engine) {
  server.push({ type: 'stream', chunks: [{ tool: { name: 'lookup', input: { word: 'ciao' }, id: 'call_1' } }] })
  server.push({ type: 'stream', chunks: [{ text: 'It means ' }], end: 'hang' })
  const entered: string[] = []
  let secondStep!: () => void
  const streamingAgain = new Promise<void>((resolve) => (secondStep = resolve))
  const unsubscribe = engine.subscribe((event: TurnchartEvent) => {
    if (event.type === 'turn.transition' && event.to === 'streaming' && entered.push(event.to) === 2) secondStep()
  })
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'What does ciao mean?')
  await streamingAgain // its row, the tool's result and the transition are committed
  unsubscribe()
  return { session, turn }
}

async function readBack(file: string, sessionId: string, turnId: string) {
  const store = await openReadOnlyStore(file)
  try {
    return await store.read(async (s) => ({ turn: await s.turns.get(turnId), messages: await s.messages.list(sessionId) }))
  } finally {
    await store.close()
  }
}

test('engine.backup while a turn streams: the copy is a turnchart database with the rows the turn had committed', async () => {
  const database = path.join(dir, 'app.db')
  const engine = await createEngine({ database, model: modelFor(server), tools: { lookup } })
  try {
    const { session, turn } = await turnStreaming(engine)
    const file = path.join(dir, 'backup.db')
    await engine.backup(file)
    const { turn: row, messages } = await readBack(file, session.id, turn.id)
    expect(row).toMatchObject({ id: turn.id, state: 'streaming', outcome: null })
    expect(messages[0].parts).toEqual([expect.objectContaining({ type: 'text', text: 'What does ciao mean?' })])
    const tools = messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool')
    expect(tools).toEqual([expect.objectContaining({ tool: 'lookup', state: expect.objectContaining({ status: 'completed', output: { meaning: 'ciao means hello' } }) })])
    // The CLI reads it as any turnchart database.
    const shown = await runCli(['show', file, session.id])
    expect(shown).toMatchObject({ code: 0, stderr: '' })
    expect(shown.stdout).toContain('tool lookup({"word":"ciao"}) completed → {"meaning":"ciao means hello"}')
    // The turn went on meanwhile; an existing file is never overwritten.
    await expect(engine.backup(file)).rejects.toThrow(InvalidArgumentError)
    turn.abort()
    expect((await turn.done).outcome).toBe('aborted')
  } finally {
    await engine.close()
  }
})

test('turnchart backup <db> <file> while an engine streams a turn in that database', async () => {
  const database = path.join(dir, 'app.db')
  const engine = await createEngine({ database, model: modelFor(server), tools: { lookup } })
  try {
    const { session, turn } = await turnStreaming(engine)
    const file = path.join(dir, 'cli-backup.db')
    const run = await runCli(['backup', database, file])
    expect(run).toEqual({ code: 0, stdout: `backed up ${database} to ${file}\n`, stderr: '' })
    const { turn: row, messages } = await readBack(file, session.id, turn.id)
    expect(row).toMatchObject({ state: 'streaming' })
    expect(messages.flatMap((m) => m.parts).some((p) => p.type === 'tool' && p.state.status === 'completed')).toBe(true)
    const again = await runCli(['backup', database, file])
    expect(again).toEqual({ code: 1, stdout: '', stderr: `turnchart: ${file} exists: name a file that does not exist yet (the backup is written there)\n` })
    turn.abort()
    await turn.done
  } finally {
    await engine.close()
  }
})

test("close() checkpoints the WAL into the file while a reader keeps the database open: a copy of the file alone holds the engine's rows", async () => {
  const database = path.join(dir, 'app.db')
  const engine = await createEngine({ database, model: modelFor(server) })
  const session = await engine.createSession()
  server.text('Hello there.')
  expect((await engine.prompt(session.id, 'Hi').done).outcome).toBe('completed')
  // A reader as `turnchart view` holds one: its connection open across the engine's close.
  const reader = await openReadOnlyStore(database)
  try {
    expect(await reader.read((s) => s.sessions.list())).toHaveLength(1)
    await engine.close()
    const copy = path.join(dir, 'copy.db')
    fs.copyFileSync(database, copy) // `cp app.db backup.db`: the file without its -wal
    const { messages } = await readBack(copy, session.id, 'none')
    expect(messages.map((m) => m.info.role)).toEqual(['user', 'assistant'])
    expect(fs.statSync(`${database}-wal`, { throwIfNoEntry: false })?.size ?? 0).toBe(0)
  } finally {
    await reader.close()
  }
})

test('a database without a file to copy: engine.backup on a MemoryStore says what to use', async () => {
  const { MemoryStore } = await import('../../src')
  const engine = await createEngine({ database: new MemoryStore(), model: modelFor(server) })
  try {
    const error = await engine.backup(path.join(dir, 'x.db')).catch((e: unknown) => e)
    expect(InvalidOptionError.isInstance(error)).toBe(true)
    expect((error as Error).message).toContain('a SQLite database for engine.backup')
  } finally {
    await engine.close()
  }
})

itPostgres('turnchart backup of a PostgreSQL URL makes no file and gives the pg_dump command for its schema', async () => {
  const schema = freshSchemaName()
  const url = withParams(pgBaseUrl, { schema })
  try {
    await (await createEngine({ database: url, model: modelFor(server) })).close()
    const run = await runCli(['backup', url, path.join(dir, 'pg.db')])
    expect(run.code).toBe(1)
    const plain = new URL(url)
    plain.searchParams.delete('schema')
    expect(run.stderr).toContain(`Back up turnchart's schema with pg_dump: pg_dump --schema=${schema} --format=custom --file=<file> '${plain}'`)
    expect(fs.existsSync(path.join(dir, 'pg.db'))).toBe(false)
  } finally {
    await dropSchemas(schema)
  }
})
