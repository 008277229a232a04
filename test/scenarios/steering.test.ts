/**
 * Steering a running turn and approving with an edited input (issue 25), through a real engine
 * on SQLite and on PostgreSQL: the steered message is stored at once, the model sees it at the
 * next step boundary (after the tools' results), the log shows `turn.steered`, several keep
 * their order, one that comes too late starts the next turn, and another engine on the database
 * may steer; an approval's edited input is checked against the tool's schema, runs the tool,
 * and is what the model's next request shows, while the part keeps the model's.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, InvalidArgumentError, type Engine, type TurnStreamPart } from '../../src'
import { deferred } from '../../src/core/deferred'
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely'
import { startScriptedServer } from '../../src/testing'
import { kyselyWith } from '../support/failing-writes'
import Database from 'better-sqlite3'
import { newId } from '../../src/core/ids'
import { createHarness, freshDatabase, modelFor, sqliteOnly, type Harness } from '../support/harness'

let h: Harness
let other: Engine | undefined
afterEach(async () => {
  await other?.close()
  other = undefined
  await h?.close()
})

/** A tool whose calls wait until the test releases them; `started` resolves when one begins. */
function gatedTool() {
  let started = deferred<void>()
  let release = deferred<void>()
  const gated = tool({
    description: 'Run the checks',
    inputSchema: z.object({}),
    execute: async () => {
      started.resolve()
      await release.promise
      return 'checks ran'
    },
  })
  return {
    gated,
    started: () => started.promise,
    release: () => {
      release.resolve()
      started = deferred<void>()
      release = deferred<void>()
    },
  }
}

const booked: string[] = []
const book = tool({
  description: 'Book a room',
  inputSchema: z.object({ room: z.enum(['small', 'large']), nights: z.number().int().positive().default(1) }),
  needsApproval: true,
  execute: async ({ room, nights }) => {
    booked.push(`${room}x${nights}`)
    return `booked the ${room} room for ${nights}`
  },
})
const pay = tool({ description: 'Pay', inputSchema: z.object({ amount: z.number() }), needsApproval: true, execute: async ({ amount }) => `paid ${amount}` })

type Body = { messages: Array<{ role: string; content: unknown; tool_calls?: Array<{ function: { arguments: string } }> }> }
const roles = (body: Body) => body.messages.map((m) => m.role)
const userTexts = (body: Body) => body.messages.filter((m) => m.role === 'user').map((m) => m.content)

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const item of stream) out.push(item)
  return out
}

test('a steer while a tool runs: stored at once, the next model call sees it after the tool result, the log shows turn.steered', async () => {
  const checks = gatedTool()
  h = await createHarness({ tools: { checks: checks.gated } })
  h.server.tool('checks', {}, { id: 'call_c' })
  h.server.text('Checked, and the tests pass.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run the checks')
  const parts = collect(turn.fullStream)
  await checks.started()
  const steered = await h.engine.steer(session.id, 'also check the tests')
  // Stored before the turn took it: any engine on the database sees it.
  expect(await h.engine.queue(session.id)).toMatchObject([{ id: steered.id, kind: 'steer', input: [{ type: 'text', text: 'also check the tests' }] }])
  checks.release()
  const result = await turn.done
  expect(result).toMatchObject({ outcome: 'completed', text: 'Checked, and the tests pass.' })
  expect(await steered.done).toMatchObject({ turnId: turn.id, outcome: 'completed' }) // delivered by the running turn
  const second = h.server.requests[1].body as Body
  expect(userTexts(second)).toEqual(['run the checks', 'also check the tests'])
  expect(roles(second).slice(-2)).toEqual(['tool', 'user'])
  expect(h.server.calls).toBe(2)
  const log = await h.engine.transitions(turn.id)
  // Taken by the step gate once the tools are done (their actor decides it), before the next model call; the gate then decides again in its state.
  expect(log.map((t) => `${t.from} -${t.event}-> ${t.to}`)).toEqual([
    'idle -turn.start-> step-gate',
    'step-gate -gate.continue-> streaming',
    'streaming -step.finished-> tool-running',
    'tool-running -turn.steered-> step-gate',
    'step-gate -gate.continue-> streaming',
    'streaming -step.finished-> completed',
  ])
  expect(await h.engine.queue(session.id)).toEqual([])
  expect((await parts).filter((p): p is Extract<TurnStreamPart, { type: 'steered' }> => p.type === 'steered').map((p) => p.text)).toEqual(['also check the tests'])
  // Stored between the step's tool result and the next answer.
  const stored = await h.engine.messages(session.id)
  expect(stored.map((m) => m.info.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
  expect(stored[2].info.turnId).toBe(turn.id)
})

test('several steers keep their order; prompt(…, { whenBusy: "steer" }) steers too', async () => {
  const checks = gatedTool()
  h = await createHarness({ tools: { checks: checks.gated } })
  h.server.tool('checks', {}, { id: 'call_c' })
  h.server.text('Done with all three.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run the checks')
  await checks.started()
  const a = await h.engine.steer(session.id, 'first this')
  const b = h.engine.prompt(session.id, 'then that', { whenBusy: 'steer' })
  await b.stored
  const c = await h.engine.steer(session.id, [{ type: 'text', text: 'and finally this' }])
  checks.release()
  await turn.done
  await Promise.all([a.done, b.done, c.done])
  expect(userTexts(h.server.requests[1].body as Body)).toEqual(['run the checks', 'first this', 'then that', 'and finally this'])
  expect((await h.engine.transitions(turn.id)).filter((t) => t.event === 'turn.steered')).toHaveLength(1) // one boundary took all three
})

test('a steer the turn ends before taking starts the next turn; with no turn running, a steer is a prompt', async () => {
  h = await createHarness()
  const session = await h.engine.createSession()
  h.server.hang()
  const turn = h.engine.prompt(session.id, 'write a poem')
  await h.server.waitForCall(1)
  const late = await h.engine.steer(session.id, 'make it short')
  h.server.text('A short poem.')
  turn.abort() // ends with no step boundary left
  expect((await turn.done).outcome).toBe('aborted')
  const next = await late.done
  expect(next.turnId).not.toBe(turn.id)
  expect(next).toMatchObject({ outcome: 'completed', text: 'A short poem.' })
  expect(userTexts(h.server.requests[1].body as Body).at(-1)).toBe('make it short')

  h.server.text('Hello.')
  const idle = await h.engine.steer(session.id, 'hi')
  expect(await idle.done).toMatchObject({ outcome: 'completed', text: 'Hello.' })
})

// The flake of the test above: a steer's (or queued prompt's) handle is registered before its row
// is written, and the poll that follows an earlier one, running in between, found neither a queue
// row nor a turn and called it cancelled. Here the row's insert is held inside its transaction
// (a plugin on the engine's Kysely) while the poll runs every 10 ms. On PostgreSQL the poll reads
// on the pool's other connections meanwhile; on SQLite (one connection) it waits for the
// transaction, as it did not when the transaction had not begun yet (the flake's window).
test('a prompt whose row is still being written is not called cancelled by the poll that follows an earlier one', async () => {
  const fresh = freshDatabase()
  const hold = new HoldQueueInsert()
  const db = await kyselyWith(fresh, hold)
  const server = await startScriptedServer()
  const engine = await createEngine({ database: db, model: modelFor(server), controlPollIntervalMs: 10 })
  try {
    const session = await engine.createSession()
    server.hang()
    const running = engine.prompt(session.id, 'write a poem')
    await server.waitForCall(1)
    const first = engine.prompt(session.id, 'first', { whenBusy: 'enqueue' })
    await first.stored // the queue now polls for it
    const release = hold.next()
    const second = engine.prompt(session.id, 'second', { whenBusy: 'enqueue' })
    await hold.holding
    // A window of about 30 polls with the row unwritten: its handle must still be waiting after it.
    const seen = await Promise.race([
      second.done.then(() => 'settled', (error: Error) => error.name),
      new Promise<string>((resolve) => setTimeout(() => resolve('waiting'), 300)),
    ])
    release()
    expect(seen).toBe('waiting')
    await second.stored
    server.text('First.').text('Second.')
    running.abort()
    expect(await first.done).toMatchObject({ outcome: 'completed', text: 'First.' })
    expect(await second.done).toMatchObject({ outcome: 'completed', text: 'Second.' })
  } finally {
    await engine.close()
    await server.close()
    await fresh.drop()
  }
})

/** Holds the result of the next insert into turnchart_queue (inside the engine's transaction) until released. */
class HoldQueueInsert implements KyselyPlugin {
  #gate: Promise<void> | undefined
  #armed = false
  #queries = new Set<unknown>()
  #held = deferred<void>()
  /** Resolves once the insert is being held. */
  get holding(): Promise<void> {
    return this.#held.promise
  }
  /** Arms the hold; returns its release. */
  next(): () => void {
    const gate = deferred<void>()
    this.#gate = gate.promise
    this.#armed = true
    return () => gate.resolve()
  }
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    const node = args.node as { kind: string; into?: { table?: { identifier?: { name?: string } } } }
    if (this.#armed && node.kind === 'InsertQueryNode' && node.into?.table?.identifier?.name === 'turnchart_queue') {
      this.#armed = false
      this.#queries.add(args.queryId)
    }
    return args.node
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.#queries.delete(args.queryId)) {
      this.#held.resolve()
      await this.#gate
    }
    return args.result
  }
}

test('another engine on the database steers a turn this one runs', async () => {
  const checks = gatedTool()
  h = await createHarness({ tools: { checks: checks.gated } })
  other = await createEngine({ database: h.dbPath, model: modelFor(h.server), recovery: { onOpen: false, intervalMs: 0 } })
  h.server.tool('checks', {}, { id: 'call_c' })
  h.server.text('Both done.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run the checks')
  await checks.started()
  await other.steer(session.id, 'from the other engine')
  checks.release()
  await turn.done
  expect(userTexts(h.server.requests[1].body as Body)).toEqual(['run the checks', 'from the other engine'])
})

// The gate skips its read of the queue while the store's change mark stays (nothing queued
// since a read found no steer); a row another connection commits to the file moves the mark.
sqliteOnly('a steer another process stores in the SQLite file joins the next model call, after a gate that found none', async () => {
  const checks = gatedTool()
  h = await createHarness({ tools: { checks: checks.gated } })
  h.server.tool('checks', {}, { id: 'call_1' })
  h.server.tool('checks', {}, { id: 'call_2' })
  h.server.text('All done.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'run the checks twice')
  await checks.started()
  checks.release() // the gate before the second call reads the queue and finds nothing
  await checks.started()
  const elsewhere = new Database(h.dbPath)
  try {
    elsewhere
      .prepare("insert into turnchart_queue (id, session_id, input, options, created_at, kind) values (?, ?, ?, '{}', ?, 'steer')")
      .run(newId('trn'), session.id, JSON.stringify([{ type: 'text', text: 'from another process' }]), Date.now())
  } finally {
    elsewhere.close()
  }
  checks.release()
  await turn.done
  expect(userTexts(h.server.requests[1].body as Body)).toEqual(['run the checks twice'])
  expect(userTexts(h.server.requests[2].body as Body)).toEqual(['run the checks twice', 'from another process'])
})

test('approve with an edited input: checked against the schema (a bad one leaves the call pending), run with the edit, shown to the model; the part keeps both inputs', async () => {
  booked.length = 0
  h = await createHarness({ tools: { book, pay }, editableApprovals: ['book'] })
  h.server.tool('book', { room: 'large', nights: 2 }, { id: 'call_b' })
  h.server.text('Booked the small room.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'book a room')
  await h.waitForEvent((e) => e.type === 'approval.requested')
  await expect(h.engine.approve(turn.id, 'call_b', { input: { room: 'penthouse' } })).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'options.input' })
  expect((await h.engine.readStatus(session.id)).type).toBe('busy')
  expect(turn.actor.getSnapshot().value).toMatchObject({ running: 'awaiting-approval' })
  await h.engine.approve(turn.id, 'call_b', { input: { room: 'small' } })
  await turn.done
  expect(booked).toEqual(['smallx1']) // the schema's default filled in
  const part = (await h.engine.messages(session.id)).flatMap((m) => m.parts).find((p) => p.type === 'tool')
  expect(part).toMatchObject({ state: { status: 'completed', input: { room: 'small', nights: 1 }, modelInput: { room: 'large', nights: 2 } } })
  const call = (h.server.requests[1].body as Body).messages.find((m) => m.tool_calls)!.tool_calls![0]
  expect(JSON.parse(call.function.arguments)).toEqual({ room: 'small', nights: 1 })
})

test('an edit of a tool editableApprovals does not name is refused, and the call stays pending', async () => {
  h = await createHarness({ tools: { book, pay }, editableApprovals: ['book'] })
  h.server.tool('pay', { amount: 100 }, { id: 'call_p' })
  h.server.text('Paid.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'pay')
  await h.waitForEvent((e) => e.type === 'approval.requested')
  const refused = await h.engine.approve(turn.id, 'call_p', { input: { amount: 1 } }).catch((e: unknown) => e)
  expect(InvalidArgumentError.isInstance(refused)).toBe(true)
  expect((refused as Error).message).toMatch(/editableApprovals/)
  await h.engine.approve(turn.id, 'call_p')
  expect((await turn.done).outcome).toBe('completed')
  const part = (await h.engine.messages(session.id)).flatMap((m) => m.parts).find((p) => p.type === 'tool')
  expect(part).toMatchObject({ state: { status: 'completed', input: { amount: 100 }, output: 'paid 100' } })
})

test('an approval with an edited input from another engine on the database', async () => {
  booked.length = 0
  h = await createHarness({ tools: { book }, editableApprovals: true, controlPollIntervalMs: 20 })
  other = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { book }, editableApprovals: true, recovery: { onOpen: false, intervalMs: 0 } })
  h.server.tool('book', { room: 'large' }, { id: 'call_b' })
  h.server.text('Booked.')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'book a room')
  await h.waitForEvent((e) => e.type === 'approval.requested')
  await expect(other.approve(turn.id, 'call_b', { input: { room: 'huge' } })).rejects.toMatchObject({ name: 'InvalidArgumentError' })
  await other.approve(turn.id, 'call_b', { input: { room: 'small', nights: 3 } })
  await turn.done
  expect(booked).toEqual(['smallx3'])
})
