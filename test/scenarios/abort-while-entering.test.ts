/**
 * An abort that arrives while the row entering `tool-running` or `compacting` commits: the
 * state's work must not start (no tool runs, no summary is asked for), and the turn ends
 * aborted. The abort is sent from inside the insert of that row (a SQLite trigger calling a
 * function of this process, so it lands between the chart entering the state and the commit
 * that lets the state's actor start), on a real file through the engine's own Kysely.
 */
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import fs from 'node:fs'
import path from 'node:path'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor, tempDbPath } from '../support/harness'

let server: ScriptedServer
let engine: Engine | undefined
let db: Kysely<any> | undefined
let file: string
beforeEach(async () => {
  server = await startScriptedServer()
  file = tempDbPath()
})
afterEach(async () => {
  await engine?.close()
  await db?.destroy()
  await server.close()
  engine = undefined
  db = undefined
  fs.rmSync(path.dirname(file), { recursive: true, force: true })
})

/** An engine on `file` whose insert of a transition row into `state` calls `onEnter` inside the statement. */
async function engineAborting(state: string, onEnter: () => void, options: Partial<Parameters<typeof createEngine>[0]> = {}): Promise<Engine> {
  const handle = new Database(file)
  handle.pragma('journal_mode = WAL')
  handle.pragma('foreign_keys = ON')
  handle.function('turn_entered', (to: unknown) => {
    if (to === state) onEnter()
    return null
  })
  db = new Kysely<any>({ dialect: new SqliteDialect({ database: handle }) })
  engine = await createEngine({ database: db, model: modelFor(server), recovery: { onOpen: false, intervalMs: 0 }, ...options })
  handle.exec(`create trigger abort_on_entry after insert on turnchart_transitions begin select turn_entered(new.to_state); end`)
  return engine
}

test('an abort while the row entering tool-running commits: the tool never runs, the turn ends aborted', async () => {
  const runs: unknown[] = []
  const deploy = tool({ description: 'deploys', inputSchema: z.object({ env: z.string() }), execute: async (input) => (runs.push(input), 'deployed') })
  let abort = () => {}
  const e = await engineAborting('tool-running', () => abort(), { tools: { deploy } })
  server.tool('deploy', { env: 'prod' })
  server.text('never asked for')
  const session = await e.createSession()
  const turn = e.prompt(session.id, 'deploy')
  abort = () => turn.abort('stop')
  const result = await turn.done
  expect(result.outcome).toBe('aborted')
  expect(runs).toEqual([])
  expect(server.requests).toHaveLength(1)
  expect((await e.transitions(turn.id)).map((row) => row.to)).toEqual(expect.arrayContaining(['tool-running', 'aborted']))
})

test('an abort while the row entering compacting commits: no summary is asked for, the turn ends aborted', async () => {
  let abort = () => {}
  const e = await engineAborting('compacting', () => abort())
  server.error(400, { error: { message: 'too long', code: 'context_length_exceeded' } })
  server.text('a summary never asked for')
  const session = await e.createSession()
  const turn = e.prompt(session.id, 'hi')
  abort = () => turn.abort('stop')
  const result = await turn.done
  expect(result.outcome).toBe('aborted')
  expect(server.requests).toHaveLength(1)
  expect((await e.transitions(turn.id)).map((row) => row.to)).toEqual(expect.arrayContaining(['compacting', 'aborted']))
})
