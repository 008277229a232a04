/**
 * Turns on a real Restate: restate-server from npm on ports and data of its own, turnchart's
 * service (`createRestateService`) in a child process on Node 22, the model a scripted server.
 * Each process is SIGKILLed where a crash costs most, and what a user would see is checked: the
 * turn's result through Restate's ingress, the requests the provider saw, the tools' side
 * effects, and the turn's rows in the store (the same log an engine writes).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createEngine, pollTurnStream, type Engine } from '../../src'
import type { TurnChunk } from '../../src/ui-stream/turn-chunks'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { testNeeding } from '../support/requires'
import { freePort, restate, startRestateServer, startService, until, type RestateServer, type ServiceProcess } from '../support/restate'
import { startSwitchProxy, type SwitchProxy } from '../support/switch-proxy'
import { staleRunIsFenced } from '../support/host-contract'
import { modelFor } from '../support/harness'

jest.setTimeout(120_000)
const it = testNeeding(restate)

let dir: string
let model: ScriptedServer
let server: RestateServer | undefined
let service: ServiceProcess | undefined
let port: number
let ledger: string
let readEngine: Engine | undefined
let paused: ServiceProcess | undefined
let proxy: SwitchProxy | undefined

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-restate-test-'))
  ledger = path.join(dir, 'side-effects.log')
  fs.writeFileSync(ledger, '')
  model = await startScriptedServer()
  port = await freePort()
})
afterEach(async () => {
  await paused?.kill()
  await proxy?.close()
  await service?.kill()
  await server?.stop()
  await readEngine?.close()
  await model.close()
  service = server = readEngine = paused = proxy = undefined
  fs.rmSync(dir, { recursive: true, force: true })
})

const database = () => path.join(dir, 'agent.db')
const sideEffects = () => fs.readFileSync(ledger, 'utf8').split('\n').filter(Boolean)

const serviceOn = (onPort: number, env: NodeJS.ProcessEnv = {}) => startService(path.join(__dirname, 'service-child.ts'), [database(), model.url], onPort, { ...process.env, TURNCHART_SIDE_EFFECTS: ledger, ...env })

async function startAll(env: NodeJS.ProcessEnv = {}): Promise<RestateServer> {
  server = await startRestateServer()
  service = await serviceOn(port, env)
  await server.register(service.url)
  return server
}

/** The service's process SIGKILLed and started again on the same port (Restate retries the invocation on it). */
async function restartService(env: NodeJS.ProcessEnv = {}): Promise<void> {
  await service!.kill()
  service = await serviceOn(port, env)
}

/** The session's status through the ingress, once it is `state`. */
function statusIs(restateServer: RestateServer, sessionId: string, state: string) {
  return until(`session ${sessionId} in '${state}'`, async () => {
    const status = (await restateServer.call('turnchart', sessionId, 'status')) as { state?: string; turnId?: string }
    return status.state === state ? status : undefined
  })
}

/** The turn's rows, read with an engine of turnchart's own on the same file (as `turnchart show` would). */
async function storedStates(turnId: string): Promise<string[]> {
  readEngine ??= await createEngine({ database: database(), model: modelFor(model), recovery: { onOpen: false, intervalMs: 0 } })
  return (await readEngine.transitions(turnId)).map((t) => t.to)
}

it('a turn with an approval: the approval sent through the ingress after restate-server itself was SIGKILLed and started again; the card charged once', async () => {
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  model.text('charged, done')
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'charge 5')
  const { turnId } = await statusIs(restateServer, 's1', 'awaiting-approval')

  await restateServer.restart()
  await restateServer.call('turnchart', 's1', 'approve', { callId: 'call_charge', by: 'ops' })

  expect(await restateServer.attach(invocation)).toEqual({ turnId, outcome: 'completed', text: 'charged, done' })
  expect(sideEffects()).toEqual(['charged 5'])
  expect(model.calls).toBe(2)
  expect(await storedStates(turnId!)).toEqual(expect.arrayContaining(['awaiting-approval', 'tool-running', 'completed']))
  expect(await restateServer.call('turnchart', 's1', 'status')).toEqual({ type: 'idle' })
})

it('an approval of a call that does not wait is refused with 409 and the error named; nothing is stored', async () => {
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  model.text('done')
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'charge 5')
  await statusIs(restateServer, 's1', 'awaiting-approval')
  await expect(restateServer.call('turnchart', 's1', 'approve', { callId: 'call_other' })).rejects.toMatchObject({ status: 409, body: expect.stringContaining('call_other') })
  await restateServer.call('turnchart', 's1', 'deny', { callId: 'call_charge', reason: 'not today' })
  expect(await restateServer.attach(invocation)).toMatchObject({ outcome: 'completed', text: 'done' })
  expect(sideEffects()).toEqual([])
})

it('a refused request stores nothing: an empty prompt to a session never seen is refused with 400 and leaves no session; so is an empty steer', async () => {
  const restateServer = await startAll()
  await expect(restateServer.call('turnchart', 'never-seen', 'prompt', '   ')).rejects.toMatchObject({ status: 400, body: expect.stringContaining('input') })
  await expect(restateServer.call('turnchart', 'never-seen', 'prompt', { input: 'hello', options: { maxSteps: -1 } })).rejects.toMatchObject({ status: 400 })
  await expect(restateServer.call('turnchart', 'never-seen', 'steer', '')).rejects.toMatchObject({ status: 400 })
  readEngine ??= await createEngine({ database: database(), model: modelFor(model), recovery: { onOpen: false, intervalMs: 0 } })
  expect(await readEngine.getSession('never-seen')).toBeUndefined()
  expect(await readEngine.listSessions()).toEqual([])
  expect(model.calls).toBe(0)
})

it('the service SIGKILLed mid-stream: Restate runs the invocation again on the restarted process, the finished step is not asked again, the turn completes', async () => {
  model.tool('send', { to: 'ana' }, { id: 'call_send' })
  model.push({ type: 'stream', chunks: [{ text: 'half of ' }, { text: 'it' }], end: 'hang' })
  model.text('all of it')
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'send ana a note')
  await service!.waitFor((m) => m.type === 'delta')

  await restartService()

  const result = (await restateServer.attach(invocation)) as { turnId: string }
  expect(result).toMatchObject({ outcome: 'completed', text: 'all of it' })
  // The first step (the tool call) was asked once; the step killed mid-stream was asked again.
  expect(model.requests.length).toBe(3)
  expect(sideEffects()).toEqual(['sent to ana'])
  expect(await storedStates(result.turnId)).toEqual(expect.arrayContaining(['interrupted', 'completed']))
})

it('the service SIGKILLed inside a non-idempotent tool: the call is in doubt after the restart, never run again; resolveCall through the ingress settles it', async () => {
  model.tool('send', { to: 'ana' }, { id: 'call_send' })
  model.text('sent, as the ledger says')
  const restateServer = await startAll({ TURNCHART_HANG_IN_TOOL: '1' })
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'send ana a note')
  await service!.waitFor((m) => m.type === 'in-tool')

  await restartService()

  const { turnId } = await statusIs(restateServer, 's1', 'call-in-doubt')
  expect(model.calls).toBe(1)
  await restateServer.call('turnchart', 's1', 'resolveCall', { callId: 'call_send', resolution: { output: 'sent to ana (seen in the ledger)' } })
  expect(await restateServer.attach(invocation)).toEqual({ turnId, outcome: 'completed', text: 'sent, as the ledger says' })
  expect(sideEffects()).toEqual(['sent to ana'])
  expect(model.calls).toBe(2)
})

it('the host contract: a stale attempt is fenced (the service paused by SIGSTOP in its model call while Restate retries on another process behind the same address)', async () => {
  // Two service processes behind one address (a balancer): the deployment is the proxy. The
  // proxy cuts Restate's connection when it switches, so Restate retries the invocation on the
  // second process at once, while the first lives on, paused.
  const restateServer = (server = await startRestateServer())
  const first = (paused = await serviceOn(port))
  const second = (service = await serviceOn(await freePort()))
  const switching = (proxy = await startSwitchProxy(port))
  await restateServer.register(`http://127.0.0.1:${switching.port}`)
  await staleRunIsFenced({
    model,
    reader: async () => (readEngine ??= await createEngine({ database: database(), model: modelFor(model), recovery: { onOpen: false, intervalMs: 0 } })),
    sideEffects,
    async startFirst() {
      await restateServer.send('turnchart', 's1', 'prompt', 'send a note')
      return (await first.waitFor((m) => m.type === 'delta')).turnId!
    },
    pauseFirst: () => first.pause(),
    resumeFirst: () => first.resume(),
    async runElsewhere(turnId) {
      switching.switchTo(Number(new URL(second.url).port))
      await second.waitFor((m) => m.type === 'delta' && m.turnId === turnId)
    },
    firstLost: async (turnId) => (await first.waitFor((m) => m.type === 'lost' && m.turnId === turnId)).error,
  })
})

it('a tool\'s sleep outlives a restart of the service and of restate-server: Restate\'s timer wakes the turn at its deadline, not before', async () => {
  model.tool('nap', { ms: 2500 }, { id: 'call_nap' })
  model.text('rested')
  const restateServer = await startAll()
  const started = Date.now()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'rest a while')
  const { turnId } = await statusIs(restateServer, 's1', 'sleeping')
  const askedAgain = model.waitForCall(2, 60_000).then(() => Date.now())

  await service!.kill()
  await restateServer.restart()
  await restartService()

  expect(await restateServer.attach(invocation)).toEqual({ turnId, outcome: 'completed', text: 'rested' })
  expect(model.calls).toBe(2)
  // The model was asked again once the nap's 2.5 s had passed (counted from before the prompt).
  expect((await askedAgain) - started).toBeGreaterThanOrEqual(2500)
  expect(await storedStates(turnId!)).toEqual(expect.arrayContaining(['sleeping', 'completed']))
})

it('steer: taken by the waiting turn at its next model call; with no turn open, a turn of its own', async () => {
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  model.text('charged, and hello')
  model.text('hello again')
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'charge 5')
  const { turnId } = await statusIs(restateServer, 's1', 'awaiting-approval')
  await restateServer.call('turnchart', 's1', 'steer', 'and say hello')
  await restateServer.call('turnchart', 's1', 'approve', { callId: 'call_charge' })
  expect(await restateServer.attach(invocation)).toEqual({ turnId, outcome: 'completed', text: 'charged, and hello' })
  expect(JSON.stringify(model.requests[1].body.messages)).toContain('and say hello')

  const { id } = (await restateServer.call('turnchart', 's1', 'steer', { input: 'hello once more' })) as { id: string }
  await model.waitForCall(3, 30_000)
  expect(JSON.stringify(model.requests[2].body.messages)).toContain('hello once more')
  await until('the steer\'s turn to end', async () => ((await restateServer.call('turnchart', 's1', 'status')) as { type: string }).type === 'idle' || undefined)
  expect(await storedStates(id)).toEqual(expect.arrayContaining(['completed']))
  expect(model.calls).toBe(3)
})

it('abort through the ingress ends a turn that waits parked: aborted, its tool never run', async () => {
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'charge 5')
  const { turnId } = await statusIs(restateServer, 's1', 'awaiting-approval')
  await restateServer.call('turnchart', 's1', 'abort', { reason: 'changed my mind' })
  expect(await restateServer.attach(invocation)).toMatchObject({ turnId, outcome: 'aborted' })
  expect(sideEffects()).toEqual([])
  expect(model.calls).toBe(1)
  expect(await restateServer.call('turnchart', 's1', 'status')).toEqual({ type: 'idle' })
})

it('a page follows a Restate-run turn from another process by its rows, across a SIGKILL of the service: every chunk once, the stream ends with the turn', async () => {
  model.push({ type: 'stream', chunks: [{ text: 'half of ' }, { text: 'it' }], end: 'hang' })
  model.text('all of it')
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'say it')
  const { turnId } = await statusIs(restateServer, 's1', 'streaming')
  readEngine ??= await createEngine({ database: database(), model: modelFor(model), recovery: { onOpen: false, intervalMs: 0 } })
  const chunks: TurnChunk[] = []
  const sawText = new Promise<void>((resolve) => {
    void (async () => {
      for await (const chunk of pollTurnStream(readEngine!, { id: turnId!, sessionId: 's1' }, { intervalMs: 25 }) as unknown as AsyncIterable<TurnChunk>) {
        chunks.push(chunk)
        if (chunk.type === 'text-delta') resolve()
      }
    })()
  })
  // The interrupted step's text reached the rows and the page before the crash.
  await sawText
  await restartService()

  expect(await restateServer.attach(invocation)).toMatchObject({ turnId, outcome: 'completed', text: 'all of it' })
  await until('the page\'s stream to end', async () => chunks.some((c) => c.type === 'finish') || undefined)
  const texts = textsOf(chunks)
  expect(texts.at(-1)).toBe('all of it')
  // Each text part opened once and closed once; no delta sent twice (a part's text is the rows' text).
  const starts = chunks.filter((c) => c.type === 'text-start').map((c) => (c as { id: string }).id)
  expect(new Set(starts).size).toBe(starts.length)
  expect(chunks.filter((c) => c.type === 'text-end')).toHaveLength(starts.length)
  expect(texts.filter((t) => t === 'all of it')).toHaveLength(1)
  expect(chunks.filter((c) => c.type === 'finish')).toHaveLength(1)
  expect(chunks.at(-1)).toMatchObject({ type: 'finish' })
})

/** The text of each text part of a UI message stream, in order (its deltas joined). */
function textsOf(chunks: TurnChunk[]): string[] {
  const texts = new Map<string, string>()
  for (const chunk of chunks) {
    if (chunk.type === 'text-start') texts.set(chunk.id, '')
    if (chunk.type === 'text-delta') texts.set(chunk.id, texts.get(chunk.id)! + chunk.delta)
  }
  return [...texts.values()]
}

/** The open turn below the session's, once it waits for approval (as `status` reports it). */
async function childAwaitingApproval(restateServer: RestateServer, sessionId: string) {
  return until(`a child of ${sessionId}'s turn to wait for approval`, async () => {
    const status = (await restateServer.call('turnchart', sessionId, 'status')) as { turnId?: string; children?: Array<{ sessionId: string; turnId: string; state: string }> }
    const child = status.children?.find((c) => c.state === 'awaiting-approval')
    return child ? { parentTurnId: status.turnId!, child } : undefined
  })
}

it('run trees: an agentTool\'s child turn is a call to its session\'s object; its approval, sent there after a SIGKILL of the service, completes the child and then the parent', async () => {
  model.tool('errand', { task: 'charge 5' }, { id: 'call_errand' })
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  model.text('charged')
  model.text('the errand is done')
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'run the errand')
  const { parentTurnId, child } = await childAwaitingApproval(restateServer, 's1')
  expect(await restateServer.call('turnchart', child.sessionId, 'status')).toMatchObject({ type: 'busy', turnId: child.turnId, state: 'awaiting-approval' })

  await restartService()
  await restateServer.call('turnchart', child.sessionId, 'approve', { callId: 'call_charge' })

  expect(await restateServer.attach(invocation)).toEqual({ turnId: parentTurnId, outcome: 'completed', text: 'the errand is done' })
  expect(sideEffects()).toEqual(['charged 5'])
  // Each step asked once: the parent's two, the child's two.
  expect(model.calls).toBe(4)
  expect(await storedStates(child.turnId)).toEqual(expect.arrayContaining(['awaiting-approval', 'completed']))
  const parentTools = (await readEngine!.messages('s1')).flatMap((m) => m.parts).filter((p) => p.type === 'tool')
  expect(parentTools).toMatchObject([{ callId: 'call_errand', state: { status: 'completed', output: 'charged' } }])
  expect(await restateServer.call('turnchart', child.sessionId, 'status')).toEqual({ type: 'idle' })
})

it('run trees: an abort of the parent through the ingress cascades to its child waiting in its own object; both aborted, nothing charged', async () => {
  model.tool('errand', { task: 'charge 5' }, { id: 'call_errand' })
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', 'run the errand')
  const { parentTurnId, child } = await childAwaitingApproval(restateServer, 's1')

  await restateServer.call('turnchart', 's1', 'abort', { reason: 'never mind' })

  expect(await restateServer.attach(invocation)).toMatchObject({ turnId: parentTurnId, outcome: 'aborted' })
  await until('the child to end', async () => ((await restateServer.call('turnchart', child.sessionId, 'status')) as { type: string }).type === 'idle' || undefined)
  expect(await storedStates(child.turnId)).toEqual(expect.arrayContaining(['aborted']))
  expect(sideEffects()).toEqual([])
  expect(model.calls).toBe(2)
})

it('run trees: the prompt\'s budget holds over the tree, the child\'s object asking for no model call past it', async () => {
  model.tool('errand', { task: 'charge 5' }, { id: 'call_errand' })
  model.tool('charge', { amount: 5 }, { id: 'call_charge' })
  model.text('never asked')
  const restateServer = await startAll()
  const invocation = await restateServer.send('turnchart', 's1', 'prompt', { input: 'run the errand', options: { budget: { steps: 2 } } })
  const { parentTurnId, child } = await childAwaitingApproval(restateServer, 's1')
  await restateServer.call('turnchart', child.sessionId, 'approve', { callId: 'call_charge' })

  expect(await restateServer.attach(invocation)).toMatchObject({ turnId: parentTurnId, outcome: 'failed', error: { name: 'BudgetExceededError' } })
  // The parent's step and the child's: the child's next model call, and the parent's, would pass the budget.
  expect(model.calls).toBe(2)
  expect(sideEffects()).toEqual(['charged 5'])
})
