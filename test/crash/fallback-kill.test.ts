/**
 * Fallback models across a crash (issue 71): a turn that fell back from `primary` (503) to
 * `backup` is SIGKILLed while the backup streams; an engine opened on the same SQLite file
 * recovers it, and it goes on with the backup (the model its step was on, read from its log),
 * never asking the primary again.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { forkChild, type TestChild } from '../support/child-process'
import { modelFor, tempDbPath } from '../support/harness'

jest.setTimeout(60_000)

let primary: ScriptedServer
let backup: ScriptedServer
let database: string
let child: TestChild | undefined
let engine: Engine | undefined
beforeEach(async () => {
  ;[primary, backup] = await Promise.all([startScriptedServer(), startScriptedServer()])
  database = tempDbPath()
})
afterEach(async () => {
  if (child && child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL')
  await child?.exited
  await engine?.close()
  await Promise.all([primary.close(), backup.close()])
  fs.rmSync(path.dirname(database), { recursive: true, force: true })
})

/** Polls the SQLite file (the child's flushes) until `query` finds a row. */
async function untilStored(query: string): Promise<void> {
  const Database = require('better-sqlite3')
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 10))) {
    const db = new Database(database, { readonly: true, fileMustExist: true })
    try {
      if (db.prepare(query).get()) return
    } finally {
      db.close()
    }
  }
  throw new Error(`never stored: ${query}`)
}

test('a turn SIGKILLed after its fallback, while the backup streams, resumes on the backup and completes; the primary is not asked again', async () => {
  primary.error(503, { error: { message: 'primary is down' } })
  backup.push({ type: 'stream', chunks: [{ text: 'half ' }, { text: 'an answer' }], end: 'hang' })
  child = forkChild(path.join(__dirname, 'fallback-kill-child.ts'), [database, primary.url, backup.url])
  const { turnId } = await child.waitFor((m) => m.type === 'fallback')
  expect(child.messages.find((m) => m.type === 'fallback')).toMatchObject({ to: 'backup' })
  await child.waitFor((m) => m.type === 'delta' && m.delta === 'an answer')
  // (killed once the backup's attempt is stored, its step-start naming the model)
  await untilStored(`select 1 from turnchart_parts where type = 'step-start' and data like '%"model":"backup"%'`)
  child.process.kill('SIGKILL')
  await child.exited

  backup.text('the backup, after the crash')
  const primaryModel = modelFor(primary, 'primary-model')
  engine = await createEngine({ database, model: primaryModel, models: { primary: primaryModel, backup: modelFor(backup, 'backup-model') }, recovery: { onOpen: false } })
  const [recovered] = await engine.recover()
  expect(recovered.id).toBe(turnId)
  expect(await recovered.done).toMatchObject({ outcome: 'completed', text: 'the backup, after the crash' })
  expect([primary.calls, backup.calls]).toEqual([1, 2])
  const steps = (await engine.messages(recovered.sessionId)).flatMap((m) => m.parts).flatMap((p) => (p.type === 'step-start' ? [p.model] : []))
  expect(steps).toEqual(['backup', 'backup'])
})
