/**
 * approve, deny and abort from an engine that does not run the turn: a child process runs it,
 * this process's engine decides. Each takes effect within the child's `controlPollIntervalMs`
 * (100 ms here) plus a query on SQLite, at once by notification on PostgreSQL
 * (test/scenarios/push-across-engines.test.ts isolates that path); `readStatus` shows the
 * waiting calls from the database. On a SQLite file and on PostgreSQL.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { dropSchemas, freshSchemaName, modelFor, pgBaseUrl, tempDbPath, withParams } from '../support/harness'
import { testOn } from '../support/requires'
import { forkChild, type TestChild } from '../support/child-process'

jest.setTimeout(60_000)

function startChild(database: string, server: ScriptedServer): TestChild {
  return forkChild(path.join(__dirname, 'control-child.ts'), [database, server.url])
}

describe.each(['sqlite', 'postgres'] as const)('%s', (dialect) => {
  let server: ScriptedServer
  let database: string
  let cleanup: () => Promise<void>
  let other: Engine | undefined
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
    await other?.close()
    other = undefined
    if (child && child.process.exitCode === null) child.process.kill('SIGKILL')
    await child?.exited
    child = undefined
    await server.close()
    await cleanup()
  })

  /** The child waits for approval; this process's engine sees it from the database. */
  async function waiting() {
    server.tool('deploy', { env: 'prod' }, { id: 'call_deploy' })
    server.text('deployed, as you asked')
    child = startChild(database, server)
    const entered = await child.waitFor((m) => m.type === 'transition' && m.to === 'awaiting-approval')
    other = await createEngine({ database, model: modelFor(server), recovery: { onOpen: false, intervalMs: 0 } })
    expect(await other.readStatus(entered.sessionId!)).toEqual({
      type: 'busy',
      turnId: entered.turnId,
      state: 'awaiting-approval',
      approvals: [{ callId: 'call_deploy', tool: 'deploy', input: { env: 'prod' } }],
    })
    // The engine that does not run the turn knows nothing of it in memory.
    expect(other.status(entered.sessionId!)).toEqual({ type: 'idle' })
    return { turnId: entered.turnId!, sessionId: entered.sessionId! }
  }

  testOn(dialect)('approve from the other engine: the tool runs once in the engine running the turn', async () => {
    const { turnId, sessionId } = await waiting()
    const started = Date.now()
    await other!.approve(turnId, 'call_deploy')
    const tookMs = Date.now() - started
    expect((await child!.waitFor((m) => m.type === 'done')).outcome).toBe('completed')
    expect(child!.messages.filter((m) => m.type === 'executed')).toHaveLength(1)
    expect(await other!.readStatus(sessionId)).toEqual({ type: 'idle' })
    console.log(`approve from another engine (${dialect}): applied after ${tookMs} ms`)
    expect(tookMs).toBeLessThan(5_000)
    await expect(other!.approve(turnId, 'call_deploy')).rejects.toMatchObject({ name: 'ApprovalNotPendingError' })
  })

  testOn(dialect)('deny from the other engine: the tool does not run and the model sees the denial', async () => {
    const { turnId, sessionId } = await waiting()
    await other!.deny(turnId, 'call_deploy', 'not on a Friday')
    expect((await child!.waitFor((m) => m.type === 'done')).outcome).toBe('completed')
    expect(child!.messages.filter((m) => m.type === 'executed')).toHaveLength(0)
    const parts = (await other!.messages(sessionId)).flatMap((m) => m.parts)
    expect(parts.find((p) => p.type === 'tool')).toMatchObject({ state: { status: 'error', error: expect.stringContaining('not on a Friday') } })
    expect(JSON.stringify(server.requests.at(-1)!.body)).toContain('not on a Friday')
  })

  testOn(dialect)('abort from the other engine: the turn ends aborted in the engine running it', async () => {
    const { turnId, sessionId } = await waiting()
    const started = Date.now()
    await other!.abort(sessionId)
    const tookMs = Date.now() - started
    expect(await other!.getTurn(turnId)).toMatchObject({ outcome: 'aborted' })
    expect((await child!.waitFor((m) => m.type === 'done')).outcome).toBe('aborted')
    expect(child!.messages.filter((m) => m.type === 'executed')).toHaveLength(0)
    console.log(`abort from another engine (${dialect}): ended after ${tookMs} ms`)
  })
})
