/**
 * A dead engine noticed from any host (issue 73): on PostgreSQL an engine holds its liveness on
 * its listening connection, and the server ends it when the process dies. An engine "on another
 * host" (a child process whose hostname is another's, so the same-host pid check cannot tell) is
 * SIGKILLed while its turn streams; an engine here takes the turn over long before its lease
 * (30 s) runs out, and completes it.
 */
import path from 'node:path'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { forkChild, type TestChild } from '../support/child-process'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, withParams } from '../support/harness'
import { itPostgres } from '../support/requires'

jest.setTimeout(60_000)

let server: ScriptedServer
let schema: string
let child: TestChild | undefined
let engine: Engine | undefined
beforeEach(async () => {
  server = await startScriptedServer()
  schema = freshSchemaName()
})
afterEach(async () => {
  if (child && child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL')
  await child?.exited
  await engine?.close()
  await server.close()
  await dropSchemas(schema)
})

itPostgres("an engine on another host SIGKILLed mid-stream: another engine takes its turn over within two beats of 250 ms and completes it in about a second (the new model call included), not at the end of its 30 s lease", async () => {
  const database = withParams(pgBaseUrl, { schema })
  server.push({ type: 'stream', chunks: [{ text: 'half ' }, { text: 'an answer' }], end: 'hang' })
  child = forkChild(path.join(__dirname, 'liveness-child.ts'), [database, server.url])
  const { turnId } = await child.waitFor((m) => m.type === 'delta' && m.delta === 'an answer')
  engine = await createEngine({ database, model: modelFor(server), recovery: { onOpen: false, intervalMs: 30_000 } })
  const held = (await engine.getTurn(turnId!))!
  expect(held.owner).toMatch(/^another-host:\d+:.*:live$/)

  server.text('taken over')
  const done = new Promise<number>((resolve) =>
    engine!.subscribe((event) => {
      if (event.type === 'turn.transition' && event.turnId === turnId && event.to === 'completed') resolve(Date.now())
    }),
  )
  const killed = Date.now()
  child.process.kill('SIGKILL')
  const completed = await done
  // (about a second idle; a loaded runner takes longer, and the lease would take 30 s)
  expect(completed - killed).toBeLessThan(10_000)
  expect(completed).toBeLessThan(held.leaseUntil!)
  const turn = (await engine.getTurn(turnId!))!
  expect(turn.outcome).toBe('completed')
  expect(turn.epoch).toBeGreaterThan(held.epoch!)
  expect((await engine.transitions(turnId!)).map((row) => row.event)).toContain('turn.crashed')
})

itPostgres("a living engine whose liveness session drops for a moment keeps its turn: another engine's recovery pass at that moment does not take it, and the turn completes where it runs", async () => {
  const database = withParams(pgBaseUrl, { schema })
  const { Client } = await import('pg')
  const admin = new Client({ connectionString: pgBaseUrl })
  await admin.connect()
  try {
    server.push({ type: 'stream', delayMs: 400, chunks: [{ text: 'slow ' }, { text: 'but ' }, { text: 'steady ' }, { text: 'answer' }] })
    engine = await createEngine({ database, model: modelFor(server), recovery: { onOpen: false, intervalMs: 30_000 } })
    const other = await createEngine({ database, model: modelFor(server), recovery: { onOpen: false, intervalMs: 30_000 } })
    try {
      const session = await engine.createSession()
      const turn = engine.prompt(session.id, 'go')
      await server.waitForCall(1)
      const before = (await engine.getTurn(turn.id))!
      // The engine's liveness session ends (its backend terminated); it connects again after ~100 ms.
      const lockOf = `locktype = 'advisory' and classid::int4 = 1953854062 and objsubid = 2 and objid::int4 = hashtext($1)`
      const { rows } = await admin.query(`select pg_terminate_backend(pid) as done from pg_locks where ${lockOf}`, [before.owner])
      expect(rows).toEqual([{ done: true }])
      expect(await other.recover()).toEqual([])
      expect(await turn.done).toMatchObject({ outcome: 'completed', text: 'slow but steady answer' })
      const after = (await engine.getTurn(turn.id))!
      expect(after.epoch).toBe(before.epoch)
      expect((await engine.transitions(turn.id)).map((row) => row.event)).not.toContain('turn.crashed')
    } finally {
      await other.close()
    }
  } finally {
    await admin.end()
  }
})
