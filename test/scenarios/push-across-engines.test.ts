/**
 * PostgreSQL notifications between engines on one database: what one engine stores for a turn
 * another runs (approve, deny, abort, a steer, a queued prompt, a resumed page's stream) reaches
 * it by push. Every engine here polls only every 10 minutes (`controlPollIntervalMs`, the chat
 * handler's `pollIntervalMs`), so what arrives within a test arrived by notification; nothing is
 * timed, each test awaits the event. The listening connection is killed (pg_terminate_backend)
 * and comes back, and an approval stored while it was down is applied at its catch-up. On
 * SQLite nothing listens: the same calls arrive by polling.
 */
import net from 'node:net'
import { DefaultChatTransport, readUIMessageStream, tool, type UIMessage } from 'ai'
import { Kysely, PostgresDialect } from 'kysely'
import { Client, Pool } from 'pg'
import { z } from 'zod'
import { createChatHandler, createEngine, NotificationListenerError, type ChatHandler, type Engine, type EngineOptions } from '../../src'
import { notificationChannel } from '../../src/store/postgres/notify-triggers'
import { createHarness, dropSchemas, freshSchemaName, modelFor, pgBaseUrl, postgresOnly, sqliteOnly, withParams, type Harness } from '../support/harness'

const never = 600_000 // the poll: longer than any test runs
let h: Harness
const closers: Array<() => Promise<unknown> | unknown> = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
  await h?.close()
})

/** A tool that needs approval and says when it starts (the moment a decision took effect). */
function deployTool() {
  const starts: string[] = []
  let started!: () => void
  const whenStarted = new Promise<void>((resolve) => (started = resolve))
  const deploy = tool({
    description: 'Deploy',
    inputSchema: z.object({ env: z.string() }),
    needsApproval: true,
    execute: async ({ env }) => {
      starts.push(env)
      started()
      return `deployed to ${env}`
    },
  })
  return { deploy, starts, whenStarted }
}

/**
 * The owner (the harness's engine) and another engine on its database (or on `options.database`),
 * both polling every 10 minutes.
 */
async function twoEngines(options: Partial<EngineOptions> = {}, otherOptions: Partial<EngineOptions> = {}) {
  const tools = deployTool()
  h = await createHarness({ tools: { deploy: tools.deploy }, controlPollIntervalMs: never, ...options })
  const other = await createEngine({
    database: options.database ?? h.dbPath,
    model: modelFor(h.server),
    tools: { deploy: tools.deploy },
    controlPollIntervalMs: never,
    recovery: { onOpen: false, intervalMs: 0 },
    ...otherOptions,
  })
  closers.push(() => other.close())
  return { other, ...tools }
}

/** A turn of the owner waiting for approval of `deploy`. */
async function waitingTurn(answers: string[] = ['deployed']) {
  h.server.tool('deploy', { env: 'prod' }, { id: 'call_deploy' })
  for (const text of answers) h.server.text(text)
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'ship it')
  await h.waitForEvent((e) => e.type === 'approval.requested')
  return { session, turn }
}

postgresOnly('approve from another engine reaches the owner by notification: the tool starts, and approve resolves once it was applied', async () => {
  const { other, starts, whenStarted } = await twoEngines()
  expect(h.engine.notifications?.listening).toBe(true)
  const { turn } = await waitingTurn()
  const approved = other.approve(turn.id, 'call_deploy')
  await whenStarted
  await approved // resolved by the 'handled' notification, not by its 2.5-minute check
  expect((await turn.done).outcome).toBe('completed')
  expect(starts).toEqual(['prod'])
})

postgresOnly('deny from another engine reaches the owner by notification', async () => {
  const { other, starts } = await twoEngines()
  const { turn } = await waitingTurn()
  await other.deny(turn.id, 'call_deploy', 'not on a Friday')
  expect((await turn.done).outcome).toBe('completed')
  expect(starts).toEqual([])
  expect(JSON.stringify(h.server.requests.at(-1)!.body)).toContain('not on a Friday')
})

postgresOnly('abort from another engine reaches the owner by notification, and abort resolves when the turn ended', async () => {
  const { other } = await twoEngines()
  const { session, turn } = await waitingTurn()
  await other.abort(session.id)
  expect(await other.getTurn(turn.id)).toMatchObject({ outcome: 'aborted' })
  expect((await turn.done).outcome).toBe('aborted')
})

postgresOnly("a steer from another engine joins the owner's running turn; its handle settles by notification when that turn ends", async () => {
  const { other } = await twoEngines()
  const { session, turn } = await waitingTurn(['deployed, and noted'])
  const steer = await other.steer(session.id, 'also tell the team')
  await h.engine.approve(turn.id, 'call_deploy')
  expect((await turn.done).outcome).toBe('completed')
  expect(await steer.done).toMatchObject({ turnId: turn.id, outcome: 'completed', text: 'deployed, and noted' })
  expect(JSON.stringify(h.server.requests.at(-1)!.body)).toContain('also tell the team')
})

postgresOnly('a prompt queued on another engine: the owner runs it after its turn, and the handle there settles by notification', async () => {
  const { other } = await twoEngines()
  const { session, turn } = await waitingTurn(['deployed'])
  h.server.text('answer two')
  const queued = other.prompt(session.id, 'two', { whenBusy: 'enqueue' })
  await queued.stored
  await h.engine.approve(turn.id, 'call_deploy')
  expect(await queued.done).toMatchObject({ turnId: queued.id, outcome: 'completed', text: 'answer two' })
})

postgresOnly('a prompt queued on another engine starts there by notification when the owner ends its turn and closes', async () => {
  const { other } = await twoEngines()
  const { session } = await waitingTurn([]) // aborted: it makes no second model call
  h.server.text('answer two')
  const queued = other.prompt(session.id, 'two', { whenBusy: 'enqueue' })
  await queued.stored
  // The owner ends its turn and stops: it drains no queue any more. The other engine hears the end.
  await h.engine.close({ abortTurns: true })
  expect(await queued.done).toMatchObject({ turnId: queued.id, outcome: 'completed', text: 'answer two' })
  expect((await other.getTurn(queued.id))?.outcome).toBe('completed')
})

postgresOnly("a page served by another engine resumes the owner's running turn with its deltas pushed: all the text, once, then finish", async () => {
  const { other } = await twoEngines({ flushIntervalMs: 20 })
  const handler: ChatHandler = createChatHandler(other, { pollIntervalMs: never })
  closers.push(() => handler.close())
  // The stream holds after its tenth word until the page has attached: most of the text is still
  // to come when it does, however loaded the machine.
  const words = Array.from({ length: 60 }, (_, i) => `w${i} `)
  let attach!: () => void
  const attached = new Promise<void>((resolve) => (attach = resolve))
  h.server.push({ type: 'stream', delayMs: 2, chunks: words.map((text) => ({ text })), holdBefore: { chunk: 10, until: attached } })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'write')
  await h.waitForEvent((e) => e.type === 'part.delta' && e.delta === 'w9 ')
  const transport = new DefaultChatTransport<UIMessage>({
    api: 'http://127.0.0.1/api/chat',
    fetch: (async (input: string | URL, init?: RequestInit) => handler(new Request(input, init))) as typeof fetch,
  })
  const stream = await transport.reconnectToStream({ chatId: session.id })
  const types: string[] = []
  let message: UIMessage | undefined
  const tapped = stream!.pipeThrough(new TransformStream({ transform: (chunk, c) => (types.push(chunk.type), attach(), c.enqueue(chunk)) }))
  for await (const snapshot of readUIMessageStream({ stream: tapped })) message = snapshot
  expect((await turn.done).outcome).toBe('completed')
  expect(message!.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text).join('')).toBe(words.join(''))
  // Several reads, each at a flush of the owner's: the deltas came in batches, not all at the end.
  expect(types.filter((t) => t === 'text-delta').length).toBeGreaterThan(1)
  expect(types.at(-1)).toBe('finish')
})

postgresOnly('the listening connection killed: the engine reconnects, says so once, and a later approval still arrives by notification', async () => {
  const errors: unknown[] = []
  let reported!: () => void
  const dropped = new Promise<void>((resolve) => (reported = resolve))
  const secret = 'pw-not-to-be-logged'
  const onSubscriberError = (error: unknown) => {
    errors.push(error)
    reported()
  }
  // A password in the URL (trust authentication ignores it): it must not reach a report.
  const schema = freshSchemaName()
  closers.push(() => dropSchemas(schema))
  const { other, whenStarted } = await twoEngines({ onSubscriberError, database: withSecret(withParams(pgBaseUrl, { schema }), secret) })
  const listener = h.engine.notifications!
  const killed = listener.backendPid!
  const { turn } = await waitingTurn()
  await terminate(killed)
  await dropped
  expect(await listener.whenListening(10_000)).toBe(true)
  expect(listener.backendPid).not.toBe(killed)
  await other.approve(turn.id, 'call_deploy')
  await whenStarted
  expect((await turn.done).outcome).toBe('completed')
  expect(errors).toHaveLength(1)
  expect(NotificationListenerError.isInstance(errors[0])).toBe(true)
  expect(JSON.stringify(errors[0]) + String((errors[0] as Error).message)).not.toContain(secret)
  expect((errors[0] as NotificationListenerError).url).toContain(':***@')
})

postgresOnly('an approval stored while the listening connection is down arrives at its catch-up when it is back', async () => {
  // The owner listens through a proxy this test can hold shut: the outage lasts until the test says.
  const proxy = await startProxy(5432)
  closers.push(() => proxy.close())
  let reported!: () => void
  const dropped = new Promise<void>((resolve) => (reported = resolve))
  const { other, whenStarted, starts } = await twoEngines({ notifications: proxiedUrl(proxy.port), onSubscriberError: () => reported() })
  const listener = h.engine.notifications!
  expect(listener.listening).toBe(true)
  const { turn } = await waitingTurn()
  proxy.hold()
  await terminate(listener.backendPid!)
  await dropped
  expect(listener.listening).toBe(false)
  // Stored while nobody listens on the owner's side: its notification is lost. A listener of the
  // test's own hears that it was committed.
  const stored = await notificationOnce(h.dbPath, `c:${turn.id}`)
  const approved = other.approve(turn.id, 'call_deploy')
  await stored.heard
  expect(starts).toEqual([])
  proxy.release()
  await whenStarted // the reconnect's catch-up poll, not the 10-minute one
  await approved
  expect((await turn.done).outcome).toBe('completed')
})

postgresOnly('a listening URL that refuses: the engine opens all the same, says so once, and polls', async () => {
  const errors: unknown[] = []
  const { deploy, whenStarted } = deployTool()
  // Port 1 refuses at once; the password must not reach the report.
  h = await createHarness({ tools: { deploy }, controlPollIntervalMs: 20, notifications: 'postgres://postgres:pw-not-to-be-logged@127.0.0.1:1/test', onSubscriberError: (e) => errors.push(e) })
  const other = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { deploy }, recovery: { onOpen: false, intervalMs: 0 } })
  closers.push(() => other.close())
  expect(h.engine.notifications?.listening).toBe(false)
  expect(errors).toHaveLength(1)
  expect(errors[0]).toMatchObject({ name: 'NotificationListenerError', url: 'postgres://postgres:***@127.0.0.1:1/test' })
  expect(String((errors[0] as Error).message)).not.toContain('pw-not-to-be-logged')
  const { turn } = await waitingTurn()
  await other.approve(turn.id, 'call_deploy')
  await whenStarted
  expect((await turn.done).outcome).toBe('completed')
})

postgresOnly('a schema name too long for a channel name: both sides use its md5, and notifications arrive', async () => {
  const schema = `${freshSchemaName()}_${'x'.repeat(40)}`.slice(0, 63)
  closers.push(() => dropSchemas(schema))
  expect(notificationChannel(schema)).toMatch(/^turnchart_[0-9a-f]{32}$/)
  const { other, whenStarted } = await twoEngines({ database: withParams(pgBaseUrl, { schema }) })
  const { turn } = await waitingTurn()
  await other.approve(turn.id, 'call_deploy')
  await whenStarted
  expect((await turn.done).outcome).toBe('completed')
})

postgresOnly('a Kysely instance of the app: polling unless a URL to listen on is given; notifications: false polls on a URL too', async () => {
  const tools = deployTool()
  h = await createHarness({ tools: { deploy: tools.deploy } })
  const pool = new Pool({ connectionString: h.dbPath.replace(/[?&]schema=([^&]+)/, '?options=-c%20search_path%3D$1') })
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
  closers.push(() => db.destroy())
  const polling = await createEngine({ database: db, model: modelFor(h.server), recovery: { onOpen: false, intervalMs: 0 } })
  closers.push(() => polling.close())
  expect(polling.notifications).toBeUndefined()
  const listening = await createEngine({ database: db, model: modelFor(h.server), notifications: pgBaseUrl, recovery: { onOpen: false, intervalMs: 0 } })
  closers.push(() => listening.close())
  expect(listening.notifications?.listening).toBe(true)
  const off = await createEngine({ database: h.dbPath, model: modelFor(h.server), notifications: false, recovery: { onOpen: false, intervalMs: 0 } })
  closers.push(() => off.close())
  expect(off.notifications).toBeUndefined()
  // The engine on the app's Kysely instance hears the harness engine's writes in its schema.
  const heard = new Promise<unknown>((resolve) => listening.notifications!.subscribe((change) => change.kind === 'session' && resolve(change)))
  h.server.text('hi')
  const session = await h.engine.createSession()
  await h.engine.prompt(session.id, 'hi').done
  expect(await heard).toEqual({ kind: 'session', sessionId: session.id })
})

sqliteOnly('SQLite: no listener; approve from another engine arrives by polling, as before', async () => {
  const { deploy, whenStarted } = deployTool()
  h = await createHarness({ tools: { deploy }, controlPollIntervalMs: 20 })
  const other = await createEngine({ database: h.dbPath, model: modelFor(h.server), tools: { deploy }, recovery: { onOpen: false, intervalMs: 0 } })
  closers.push(() => other.close())
  expect(h.engine.notifications).toBeUndefined()
  expect(other.notifications).toBeUndefined()
  const { turn } = await waitingTurn()
  await other.approve(turn.id, 'call_deploy')
  await whenStarted
  expect((await turn.done).outcome).toBe('completed')
  await expect(createEngine({ database: h.dbPath, model: modelFor(h.server), notifications: pgBaseUrl })).rejects.toMatchObject({ name: 'InvalidOptionError', option: 'notifications' })
})

/** Resolves `heard` when `payload` is notified on the channel of `database`'s schema (listening before it returns). */
async function notificationOnce(database: string, payload: string): Promise<{ heard: Promise<void> }> {
  const schema = new URL(database).searchParams.get('schema')!
  const client = new Client({ connectionString: pgBaseUrl })
  await client.connect()
  closers.push(() => client.end())
  const heard = new Promise<void>((resolve) => client.on('notification', (message) => message.payload === payload && resolve()))
  await client.query(`listen "${notificationChannel(schema)}"`)
  return { heard }
}

/** The URL with a password in its user info. */
function withSecret(url: string, password: string): string {
  const parsed = new URL(url)
  parsed.password = password
  return parsed.toString()
}

/** Ends a server process (the listening connection's backend), from a connection of its own. */
async function terminate(pid: number): Promise<void> {
  const admin = new Client({ connectionString: pgBaseUrl })
  await admin.connect()
  try {
    const { rows } = await admin.query('select pg_terminate_backend($1) as done', [pid])
    expect(rows[0].done).toBe(true)
  } finally {
    await admin.end()
  }
}

function proxiedUrl(port: number): string {
  const url = new URL(pgBaseUrl)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return url.toString()
}

/** A TCP proxy to PostgreSQL that can refuse new connections (`hold`) until `release`. */
async function startProxy(targetPort: number): Promise<{ port: number; hold(): void; release(): void; close(): Promise<void> }> {
  const target = new URL(pgBaseUrl)
  let held = false
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    if (held) return void client.destroy()
    const upstream = net.connect(Number(target.port || targetPort), target.hostname)
    sockets.add(upstream)
    upstream.on('close', () => sockets.delete(upstream))
    client.pipe(upstream).pipe(client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    hold: () => void (held = true),
    release: () => void (held = false),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}
