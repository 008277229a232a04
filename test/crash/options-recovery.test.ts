/**
 * A turn started with per-prompt options is SIGKILLed mid-stream; the engine that recovers it
 * resumes with the same model, system prompt, tools, call settings, step limit and prompt parts.
 */
import { fork } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
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
  const child = fork(path.join(__dirname, 'options-child.ts'), [dbPath, server.url], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
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
