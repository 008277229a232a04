/**
 * Fallback models (issue 71): a turn that names a list of models (`model: ['primary',
 * 'backup']`) goes on with the next when the provider fails the one it asked, each model its
 * own scripted server over HTTP. What a user sees: the answer, the model each attempt asked (the
 * step-start part), the log's fallback row and the `model.fallback` event.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { createHarness, modelFor, type Harness } from '../support/harness'

let h: Harness
let backup: ScriptedServer
afterEach(async () => {
  await h?.close()
  await backup?.close()
})

async function withBackup(options: Record<string, unknown> = {}): Promise<void> {
  backup = await startScriptedServer()
  const echo = tool({ description: 'Echo', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => text })
  h = await createHarness((primary) => ({ models: { primary: modelFor(primary, 'primary-model'), backup: modelFor(backup, 'backup-model') }, tools: { echo }, ...options }))
}

const stepStarts = async (sessionId: string) =>
  (await h.engine.messages(sessionId)).flatMap((m) => m.parts).flatMap((p) => (p.type === 'step-start' ? [{ step: p.step, attempt: p.attempt, model: p.model }] : []))

test('a primary answering 503 falls back to the backup in the same step: the turn completes, the backup named on the step, the fallback in the log and on the bus', async () => {
  await withBackup()
  h.server.error(503, { error: { message: 'primary is down' } })
  h.server.error(503, { error: { message: 'primary is down' } })
  backup.text('from the backup')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hello', { model: ['primary', 'backup'] })
  const ui = turn.toUIMessageStreamResponse().text()
  expect(await turn.done).toMatchObject({ outcome: 'completed', text: 'from the backup' })
  // the UI stream's turn state names the model the attempt asks
  const states = (await ui).split('\n').filter((line) => line.includes('"data-turn-state"')).map((line) => JSON.parse(line.slice('data: '.length)).data)
  expect(states).toContainEqual(expect.objectContaining({ state: 'streaming', attempt: 3, model: 'backup' }))

  // retry.attemptsPerModel (2): the primary asked twice, then the backup, all in step 1
  expect([h.server.calls, backup.calls]).toEqual([2, 1])
  expect(await stepStarts(session.id)).toEqual([{ step: 1, attempt: 3, model: 'backup' }])
  const log = await h.engine.transitions(turn.id)
  const fallback = log.find((row) => row.event === 'step.failed' && row.payload.fallback)
  expect(fallback).toMatchObject({ from: 'streaming', to: 'retry-waiting', payload: { fallback: { model: 1, from: 'primary', to: 'backup' } } })
  expect(log.map((row) => row.to)).toEqual(['step-gate', 'streaming', 'retry-waiting', 'streaming', 'retry-waiting', 'streaming', 'completed'])
  expect(h.events.filter((e) => e.type === 'model.fallback')).toEqual([
    { type: 'model.fallback', sessionId: session.id, turnId: turn.id, step: 1, from: 'primary', to: 'backup', reason: expect.stringContaining('primary is down') },
  ])
})

test('the turn stays on the model it fell back to, step after step; the next turn starts on the first; a session may name the list', async () => {
  await withBackup({ retry: { attemptsPerModel: 1, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 } })
  h.server.error(503, { error: { message: 'down' } })
  backup.tool('echo', { text: 'x' }, { id: 'call_1' })
  backup.text('still the backup')
  h.server.text('the primary is back')
  const session = await h.engine.createSession({ model: ['primary', 'backup'] })
  expect(await h.engine.prompt(session.id, 'hello').done).toMatchObject({ outcome: 'completed', text: 'still the backup' })
  expect(await h.engine.prompt(session.id, 'again').done).toMatchObject({ outcome: 'completed', text: 'the primary is back' })
  expect(await stepStarts(session.id)).toEqual([
    { step: 1, attempt: 2, model: 'backup' },
    { step: 2, attempt: 1, model: 'backup' },
    { step: 1, attempt: 1, model: 'primary' },
  ])
})

test("the caller's own errors do not fall back: a 400 fails the turn on the primary, the backup never asked", async () => {
  await withBackup()
  h.server.error(400, { error: { message: 'bad request' } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hello', { model: ['primary', 'backup'] }).done
  expect(result.outcome).toBe('failed')
  expect([h.server.calls, backup.calls]).toEqual([1, 0])
  expect(h.events.some((e) => e.type === 'model.fallback')).toBe(false)
})

test('the last model is given the retry policy: when it fails too, the turn fails with RetriesExhaustedError', async () => {
  await withBackup({ retry: { maxAttempts: 2, attemptsPerModel: 1, initialDelayMs: 1, maxDelayMs: 5, jitter: 0 } })
  h.server.error(503, { error: { message: 'down' } })
  backup.error(503, { error: { message: 'down too' } })
  backup.error(503, { error: { message: 'down too' } })
  const session = await h.engine.createSession()
  const result = await h.engine.prompt(session.id, 'hello', { model: ['primary', 'backup'] }).done
  expect(result).toMatchObject({ outcome: 'failed', error: { name: 'RetriesExhaustedError', attempts: 2 } })
  expect([h.server.calls, backup.calls]).toEqual([1, 2])
})

test('a bad list is refused and nothing is stored: empty, unregistered, twice the same name', async () => {
  await withBackup()
  const session = await h.engine.createSession()
  for (const model of [[], ['primary', 'nope'], ['primary', 'primary']]) {
    expect(() => h.engine.prompt(session.id, 'hello', { model })).toThrow(expect.objectContaining({ name: 'InvalidArgumentError', argument: 'options.model' }))
  }
  await expect(h.engine.createSession({ model: [] })).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'session.model' })
  expect(await h.engine.messages(session.id)).toEqual([])
})

test("an engine may name the list for every turn (createEngine({ model: ['primary', 'backup'] })); a prompt's own model wins", async () => {
  backup = await startScriptedServer()
  h = await createHarness((primary) => ({ models: { primary: modelFor(primary, 'primary-model'), backup: modelFor(backup, 'backup-model') }, model: ['primary', 'backup'] }))
  h.server.error(503, { error: { message: 'down' } })
  h.server.error(503, { error: { message: 'down' } })
  backup.text('the engine fell back')
  h.server.text('the primary alone')
  const session = await h.engine.createSession()
  expect(await h.engine.prompt(session.id, 'hello').done).toMatchObject({ outcome: 'completed', text: 'the engine fell back' })
  expect(await h.engine.prompt(session.id, 'again', { model: 'primary' }).done).toMatchObject({ outcome: 'completed', text: 'the primary alone' })
  expect([h.server.calls, backup.calls]).toEqual([3, 1])
})

test("an engine's bad list is refused, naming the option", async () => {
  const server = await startScriptedServer()
  try {
    const models = { primary: modelFor(server) }
    for (const model of [[], ['nope'], ['primary', 'primary']]) {
      await expect(createEngine({ database: ':memory:', models, model })).rejects.toMatchObject({ name: 'InvalidOptionError', option: 'model' })
    }
  } finally {
    await server.close()
  }
})

test("upgradeCheck names a waiting turn whose fallback model the next version removed (the turn could not be configured again)", async () => {
  await withBackup()
  const ask = tool({ description: 'Asks first', inputSchema: z.object({}), needsApproval: true, execute: async () => 'asked' })
  await h.engine.close()
  const primaryModel = modelFor(h.server, 'primary-model')
  const engine = await createEngine({ database: h.dbPath, model: primaryModel, models: { primary: primaryModel, backup: modelFor(backup, 'backup-model') }, tools: { ask } })
  h.server.tool('ask', {}, { id: 'call_ask' })
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'ask', { model: ['primary', 'backup'] })
  await new Promise<void>((resolve) => engine.subscribe((e) => e.type === 'turn.transition' && e.to === 'awaiting-approval' && resolve()))
  expect((await engine.getTurn(turn.id))?.options).toMatchObject({ model: 'primary', fallbacks: ['backup'] })
  await engine.close()
  await expect(turn.done).rejects.toMatchObject({ name: 'TurnParkedError' })

  const next = await createEngine({ database: h.dbPath, model: primaryModel, models: { primary: primaryModel }, tools: { ask }, recovery: { onOpen: false } })
  try {
    expect(await next.upgradeCheck()).toEqual([expect.objectContaining({ turnId: turn.id, change: 'model-removed', model: 'backup', tool: null })])
  } finally {
    await next.close()
  }
})
