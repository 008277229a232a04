/**
 * The hosting seam is the whole contract: a host written in a test against it alone
 * (queue-host.ts: an in-process queue, its own wakes and timers, a journal file) runs turns as
 * Restate does. Its process is a real child, SIGKILLed where a crash costs most; what a user
 * would see is checked: how each turn ended, the requests the model saw, the tools' side effects
 * and the turn's rows (read with an engine of turnchart's own on the same file).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createEngine, type Engine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { forkChild, type ChildMessage, type TestChild } from '../support/child-process'
import { modelFor } from '../support/harness'

jest.setTimeout(60_000)

let dir: string
let model: ScriptedServer
let host: TestChild | undefined
let reader: Engine | undefined

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-queue-host-'))
  fs.writeFileSync(path.join(dir, 'side-effects.log'), '')
  model = await startScriptedServer()
})
afterEach(async () => {
  await killHost()
  await reader?.close()
  reader = undefined
  await model.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const database = () => path.join(dir, 'agent.db')
const sideEffects = () => fs.readFileSync(path.join(dir, 'side-effects.log'), 'utf8').split('\n').filter(Boolean)

/** The host's process, started (again) on the same database and journal. */
async function startHost(): Promise<TestChild> {
  host = forkChild(path.join(__dirname, 'queue-host-child.ts'), [database(), path.join(dir, 'journal.jsonl'), model.url], { ...process.env, TURNCHART_SIDE_EFFECTS: path.join(dir, 'side-effects.log') })
  await host.waitFor((m) => m.type === 'ready', 30_000)
  return host
}

async function killHost(): Promise<void> {
  if (!host) return
  if (host.process.exitCode === null && host.process.signalCode === null) host.process.kill('SIGKILL')
  await host.exited
  host = undefined
}

/** Sends a command; resolves with the host's answer. */
async function send(child: TestChild, command: object): Promise<ChildMessage> {
  const from = child.messages.length
  child.process.send(command)
  const answer = await child.waitFor((m) => child.messages.indexOf(m) >= from && (m.type === 'answered' || m.type === 'refused'))
  if (answer.type === 'refused') throw new Error(answer.error)
  return answer
}

const pauseOf = (child: TestChild, turnId: string, kind: string) => child.waitFor((m) => m.type === 'pause' && m.turnId === turnId && m.kind === kind, 30_000)

async function storedStates(turnId: string): Promise<string[]> {
  reader ??= await createEngine({ database: database(), model: modelFor(model), recovery: { onOpen: false, intervalMs: 0 } })
  return (await reader.transitions(turnId)).map((t) => t.to)
}

test('a prompt: run until it ends, its text returned', async () => {
  model.text('hello there')
  const child = await startHost()
  const { turnId } = await send(child, { type: 'prompt', sessionId: 's1', input: 'hi' })
  expect(await pauseOf(child, turnId!, 'ended')).toMatchObject({ outcome: 'completed', text: 'hello there' })
  expect(await storedStates(turnId!)).toEqual(['step-gate', 'streaming', 'completed'])
})

test('an approval sent after the host\'s process was SIGKILLed and started again: the journaled run runs again, waits, and the card is charged once', async () => {
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  model.text('charged')
  const first = await startHost()
  const { turnId } = await send(first, { type: 'prompt', sessionId: 's1', input: 'charge 5' })
  expect(await pauseOf(first, turnId!, 'waiting')).toMatchObject({ to: 'awaiting-approval' })

  await killHost()
  const second = await startHost()
  expect(await pauseOf(second, turnId!, 'waiting')).toMatchObject({ to: 'awaiting-approval' })
  await send(second, { type: 'approve', sessionId: 's1', callId: 'call_charge' })

  expect(await pauseOf(second, turnId!, 'ended')).toMatchObject({ outcome: 'completed', text: 'charged' })
  expect(sideEffects()).toEqual(['charged 5'])
  expect(model.calls).toBe(2)
  expect(await storedStates(turnId!)).toEqual(expect.arrayContaining(['awaiting-approval', 'tool-running', 'completed']))
})

test('a sleep: the turn waits parked until its deadline, which the host\'s own timer keeps, not before', async () => {
  model.tool('nap', { ms: 1500 }, { id: 'call_nap' })
  model.text('rested')
  const child = await startHost()
  const started = Date.now()
  const { turnId } = await send(child, { type: 'prompt', sessionId: 's1', input: 'rest' })
  const waiting = await pauseOf(child, turnId!, 'waiting')
  expect(waiting).toMatchObject({ to: 'sleeping', deadline: expect.any(Number) })
  const askedAgain = model.waitForCall(2, 30_000).then(() => Date.now())

  expect(await pauseOf(child, turnId!, 'ended')).toMatchObject({ outcome: 'completed', text: 'rested' })
  expect((await askedAgain) - started).toBeGreaterThanOrEqual(1500)
  expect(await storedStates(turnId!)).toEqual(expect.arrayContaining(['sleeping', 'completed']))
})

test('an abort of a turn waiting for approval: aborted, its tool never run', async () => {
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  const child = await startHost()
  const { turnId } = await send(child, { type: 'prompt', sessionId: 's1', input: 'charge 5' })
  await pauseOf(child, turnId!, 'waiting')
  await send(child, { type: 'abort', sessionId: 's1', reason: 'changed my mind' })

  expect(await pauseOf(child, turnId!, 'ended')).toMatchObject({ outcome: 'aborted' })
  expect(sideEffects()).toEqual([])
  expect(model.calls).toBe(1)
  expect(await storedStates(turnId!)).toEqual(expect.arrayContaining(['awaiting-approval', 'aborted']))
})
