/**
 * What a user typed survives a crash (issue 25, point 5): a steer stored before a SIGKILL
 * reaches the model after the recovery, once; an approval with an edited input stored before a
 * SIGKILL runs the tool once, with the edit. A real child process is killed; a new engine on the
 * same SQLite file recovers its turn against the same scripted server.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { forkNode } from '../support/compiled'
import { modelFor, tempDbPath } from '../support/harness'
import { hitlTools } from './hitl-tools'

jest.setTimeout(60_000)

let server: ScriptedServer
let dbPath: string
let sideEffects: string
beforeEach(async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
  sideEffects = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'side-effects-')), 'bookings.log')
  fs.writeFileSync(sideEffects, '')
})
afterEach(async () => {
  await server.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
  fs.rmSync(path.dirname(sideEffects), { recursive: true, force: true })
})

/** Runs the child until it kills itself; resolves with its session id. */
function runChildUntilKilled(mode: 'steer' | 'edit'): Promise<string> {
  return new Promise((resolve, reject) => {
    let sessionId = ''
    const child = forkNode(path.join(__dirname, 'steer-kill-child.ts'), [dbPath, server.url, mode], {
      env: { ...process.env, TURNCHART_CHILD: '1', TURNCHART_SIDE_EFFECTS: sideEffects },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    child.on('message', (message: { type: string; sessionId: string }) => {
      if (message.type === 'session') sessionId = message.sessionId
    })
    const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`the child never killed itself (${mode})`))), 30_000)
    child.once('exit', (_code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGKILL') resolve(sessionId)
      else reject(new Error(`the child exited without being killed (${mode})`))
    })
  })
}

/** The user texts of a model request, in order. */
function userTexts(body: { messages?: Array<{ role: string; content: unknown }> }): string[] {
  return (body.messages ?? []).filter((m) => m.role === 'user').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
}

test('a steer stored before the SIGKILL reaches the model after the recovery, once, after the tool result', async () => {
  server.tool('notes', {}, { id: 'call_notes' })
  server.text('Read them; the tests pass too.')
  const sessionId = await runChildUntilKilled('steer')
  expect(server.calls).toBe(1)

  const engine = await createEngine({ database: dbPath, model: modelFor(server), tools: hitlTools, recovery: { onOpen: false } })
  try {
    expect(await engine.queue(sessionId)).toMatchObject([{ kind: 'steer' }]) // stored, not yet taken
    const [turn] = await engine.recover()
    expect((await turn.done).outcome).toBe('completed')
    expect(server.calls).toBe(2)
    const body = server.requests[1].body as { messages: Array<{ role: string; content: unknown }> }
    expect(userTexts(body)).toEqual(['read the notes', 'also check the tests'])
    // After the tool's result, before the model's next answer.
    const roles = body.messages.map((m) => m.role)
    expect(roles.lastIndexOf('tool')).toBeLessThan(roles.lastIndexOf('user'))
    expect(await engine.queue(sessionId)).toEqual([])
    expect((await engine.transitions(turn.id)).filter((t) => t.event === 'turn.steered')).toHaveLength(1)
    const users = (await engine.messages(sessionId)).filter((m) => m.info.role === 'user')
    expect(users.map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''))).toEqual(['read the notes', 'also check the tests'])
  } finally {
    await engine.close()
  }
})

test('an approval with an edited input stored before the SIGKILL runs the tool once, with the edit', async () => {
  server.tool('book', { room: 'large' }, { id: 'call_book' })
  server.text('Booked the small room.')
  const sessionId = await runChildUntilKilled('edit')
  expect(fs.readFileSync(sideEffects, 'utf8')).toBe('')

  process.env.TURNCHART_SIDE_EFFECTS = sideEffects
  const engine = await createEngine({ database: dbPath, model: modelFor(server), tools: hitlTools, editableApprovals: ['book'], recovery: { onOpen: false } })
  try {
    const asked: string[] = []
    engine.subscribe((event) => {
      if (event.type === 'approval.requested') asked.push(event.turnId)
    })
    const [turn] = await engine.recover()
    expect((await turn.done).outcome).toBe('completed')
    expect(asked).toEqual([]) // the approval was stored: nobody is asked again
    expect(fs.readFileSync(sideEffects, 'utf8')).toBe('booked small\n')
    const part = (await engine.messages(sessionId)).flatMap((m) => m.parts).find((p) => p.type === 'tool')
    expect(part).toMatchObject({ tool: 'book', state: { status: 'completed', input: { room: 'small' }, modelInput: { room: 'large' }, output: 'booked the small room' } })
    // The model's next request shows the call with the input it ran with.
    const history = JSON.stringify((server.requests.at(-1)!.body as { messages: unknown[] }).messages)
    expect(history).toContain('{\\"room\\":\\"small\\"}')
    expect(history).not.toContain('large')
  } finally {
    await engine.close()
  }
})
