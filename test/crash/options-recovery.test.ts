/**
 * A turn started with per-prompt options is SIGKILLed mid-stream; the engine that recovers it
 * resumes with the same model, system prompt, tools, call settings, step limit and prompt parts.
 */
import fs from 'node:fs'
import path from 'node:path'
import { forkNode } from '../support/compiled'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { tempDbPath } from '../support/harness'
import { childPng, optionsEngine } from './options-child'

jest.setTimeout(30_000)

let server: ScriptedServer
let dbPath: string
let engine: Engine | undefined
beforeEach(async () => {
  server = await startScriptedServer()
  dbPath = tempDbPath()
})
afterEach(async () => {
  await engine?.close()
  await server.close()
  fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
})

test('a crashed turn with per-prompt options resumes with the same ones', async () => {
  server.hang()
  const child = forkNode(path.join(__dirname, 'options-child.ts'), [dbPath, server.url], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const streaming = new Promise<string>((resolve) => {
    child.on('message', (message: { type: string; to?: string; turnId?: string }) => {
      if (message.type === 'transition' && message.to === 'streaming') resolve(message.turnId!)
    })
  })
  const turnId = await streaming
  const first = await server.waitForCall(1)
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited

  server.text('resumed')
  engine = await createEngine({ database: dbPath, ...optionsEngine(server.url), recovery: { onOpen: false } })
  const [turn] = await engine.recover()
  expect(turn.id).toBe(turnId)
  const result = await turn.done
  expect(result).toMatchObject({ outcome: 'completed', text: 'resumed' })
  const second = (await server.waitForCall(2)).body
  for (const body of [first.body, second]) {
    expect(body).toMatchObject({ model: 'fast-model', temperature: 0.3, seed: 7 })
    expect(body.messages[0]).toEqual({ role: 'system', content: 'child system' })
    expect(body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['read'])
    expect(body.messages[1].content).toEqual([
      { type: 'text', text: 'look at this' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${childPng.toString('base64')}` } },
    ])
  }
  expect(await engine.getTurn(turnId)).toMatchObject({ options: { model: 'fast', system: 'child system', tools: ['read'] } })
  const replayed = await engine.replay(turnId)
  expect(replayed.at(-1)!.state).toBe('completed')
})

test('prompts queued from two engines run in order, one each, though the engine running the first was SIGKILLed', async () => {
  server.hang()
  const child = forkNode(path.join(__dirname, 'options-child.ts'), [dbPath, server.url], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const started = new Promise<{ sessionId: string; turnId: string }>((resolve) => {
    let sessionId = ''
    child.on('message', (message: { type: string; to?: string; turnId?: string; sessionId?: string }) => {
      if (message.type === 'session') sessionId = message.sessionId!
      if (message.type === 'transition' && message.to === 'streaming') resolve({ sessionId, turnId: message.turnId! })
    })
  })
  const { sessionId, turnId } = await started
  await server.waitForCall(1)

  const options = { database: dbPath, ...optionsEngine(server.url), recovery: { onOpen: false, intervalMs: 0 } }
  engine = await createEngine(options)
  const second = await createEngine(options)
  try {
    const queued = (e: Engine, id: string) =>
      new Promise<void>((resolve) => {
        const off = e.subscribe((event) => event.type === 'prompt.queued' && event.id === id && (off(), resolve()))
      })
    const p2 = engine.prompt(sessionId, 'two', { whenBusy: 'enqueue' })
    await queued(engine, p2.id)
    const p3 = second.prompt(sessionId, 'three', { whenBusy: 'enqueue' })
    await queued(second, p3.id)
    expect((await engine.queue(sessionId)).map((q) => q.id)).toEqual([p2.id, p3.id])

    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
    server.text('answer one').text('answer two').text('answer three')
    const [first] = await engine.recover()
    expect(first.id).toBe(turnId)
    const results = await Promise.all([first.done, p2.done, p3.done])
    expect(results.map((r) => [r.turnId, r.outcome, r.text])).toEqual([
      [turnId, 'completed', 'answer one'],
      [p2.id, 'completed', 'answer two'],
      [p3.id, 'completed', 'answer three'],
    ])
    // one turn each, in order, never two at once
    const messages = await engine.messages(sessionId)
    expect(messages.map((m) => [m.info.role, m.parts.find((p) => p.type === 'text') && (m.parts.find((p) => p.type === 'text') as { text: string }).text])).toEqual([
      ['user', 'look at this'],
      ['assistant', 'answer one'],
      ['user', 'two'],
      ['assistant', 'answer two'],
      ['user', 'three'],
      ['assistant', 'answer three'],
    ])
    expect(server.calls).toBe(4) // the killed request, then one per turn
    const turns = await Promise.all([turnId, p2.id, p3.id].map((id) => engine!.getTurn(id)))
    for (let i = 1; i < turns.length; i++) expect(turns[i]!.time.created).toBeGreaterThanOrEqual(turns[i - 1]!.time.updated)
    expect(await engine.queue(sessionId)).toEqual([])
  } finally {
    await second.close()
  }
})
