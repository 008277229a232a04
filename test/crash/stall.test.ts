/**
 * Fencing: an engine stalls past its lease (its event loop blocked between two of its
 * transactions on SQLite, anywhere on PostgreSQL, where the server ends a transaction left idle
 * past the lease; a SQLite engine stopped inside a transaction holds the file's write lock, so
 * nobody can take over until it runs again and commits, legitimately),
 * another engine takes the turn over and finishes it, and the stalled engine, once it runs
 * again, writes nothing: it finds the turn lost, stops it, and says so on its bus. Both engines
 * run in separate processes; on a SQLite file and on PostgreSQL.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, tempDbPath, withParams } from '../support/harness'
import { testOn } from '../support/requires'
import { openParts } from '../hostile/helpers'
import { forkChild, type TestChild } from '../support/child-process'

jest.setTimeout(40_000)

const leaseMs = 1000

function startChild(database: string, server: ScriptedServer): TestChild {
  return forkChild(path.join(__dirname, 'stall-child.ts'), [database, server.url, String(leaseMs)])
}

/** Every row of the turn's tables, for comparing the database before and after the stalled engine ran again. */
async function snapshotRows(database: string, server: ScriptedServer, turnId: string, sessionId: string): Promise<unknown> {
  const engine = await createEngine({ database, model: modelFor(server), recovery: { onOpen: false, intervalMs: 0 } })
  try {
    return { turn: await engine.getTurn(turnId), log: await engine.transitions(turnId), messages: await engine.messages(sessionId) }
  } finally {
    await engine.close()
  }
}

describe.each(['sqlite', 'postgres'] as const)('%s', (dialect) => {
  let server: ScriptedServer
  let database: string
  let cleanup: () => Promise<void>
  let child: TestChild | undefined

  beforeEach(async () => {
    server = await startScriptedServer()
    if (dialect === 'postgres') {
      const schema = freshSchemaName()
      database = withParams(pgBaseUrl, { schema })
      cleanup = () => dropSchemas(schema)
    } else {
      database = tempDbPath()
      cleanup = async () => fs.rmSync(path.dirname(database), { recursive: true, force: true })
    }
  })
  afterEach(async () => {
    if (child && child.process.exitCode === null) {
      child.process.kill('SIGKILL')
      await child.exited
    }
    child = undefined
    await server.close()
    await cleanup()
  })

  testOn(dialect)('an engine stalled past its lease loses the turn to another engine and writes nothing after the takeover', async () => {
    // The stalled engine's step streams a little, then its stream hangs.
    server.push({ type: 'stream', chunks: [{ text: 'stalled ' }, { text: 'engine' }], end: 'hang' })
    server.text('taken over and finished')
    child = startChild(database, server)
    const { sessionId } = (await child.waitFor((m) => m.type === 'session')) as { sessionId: string }
    const { turnId } = (await child.waitFor((m) => m.type === 'transition' && m.to === 'streaming')) as { turnId: string }
    await child.waitFor((m) => m.type === 'delta' && m.delta === 'engine')
    const flag = path.join(fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'stall-')), 'go')
    child.process.send({ type: 'stall', flag })
    await child.waitFor((m) => m.type === 'stalled')

    // Another engine takes the turn over once the stalled engine's lease has run out.
    const other = await createEngine({ database, model: modelFor(server), recovery: { onOpen: false, intervalMs: 0 }, leaseMs: 60_000 })
    try {
      let taken: Awaited<ReturnType<typeof other.recover>> = []
      const deadline = Date.now() + 10_000
      while (taken.length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, leaseMs / 2))
        taken = await other.recover()
      }
      expect(taken.map((t) => t.id)).toEqual([turnId])
      expect((await taken[0].done).outcome).toBe('completed')
      expect(await openParts(other, sessionId)).toEqual([])
    } finally {
      await other.close()
    }
    const before = await snapshotRows(database, server, turnId, sessionId)

    // The stalled engine runs again: it finds the turn lost, stops it, and exits having written nothing.
    fs.writeFileSync(flag, 'go')
    const lost = await child.waitFor((m) => m.type === 'lost')
    expect(lost).toMatchObject({ turnId, error: 'TurnOwnershipLostError' })
    expect(await child.exited).toBe(0)
    expect(await snapshotRows(database, server, turnId, sessionId)).toEqual(before)
    const log = (before as { log: Array<{ event: string }> }).log
    expect(log.map((r) => r.event)).toContain('turn.crashed')
  })
})
