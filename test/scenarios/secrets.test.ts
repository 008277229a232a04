/**
 * Nothing secret is stored, published, returned or printed (issue 14). Each channel through
 * which a provider (or undici) has been seen to hand the API key back runs a real turn with a
 * distinctive key; then every row of every table, every event, `turn.done` and everything
 * written to the console is searched for the key (and for each piece of it, so a half-redacted
 * key counts as a leak). Twice: with a key in a known provider shape and no option (the
 * patterns must catch it), and with an opaque key passed as `redact.secrets`.
 */
import { randomBytes } from 'node:crypto'
import Database from 'better-sqlite3'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine, type Engine, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer, type RecordedRequest } from '../../src/testing'
import { freshDatabase, pgBaseUrl, testDialect } from '../support/harness'
import { recordEvents } from '../support/event-log'

type Mode = 'known shape, no option' | 'opaque key in redact.secrets'

interface Channel {
  name: string
  /** How the provider is configured with the key. */
  provider: (key: string) => { apiKey?: string; headers?: Record<string, string>; queryParams?: Record<string, string> }
  /** The replies that hand the key back. */
  script: (server: ScriptedServer, key: string) => void
  /** The useful part of the stored error that must survive. */
  expectError: Record<string, unknown>
  retry?: { maxAttempts: number }
}

const echoHeaders = (r: RecordedRequest) => ({ error: { message: 'request rejected', type: 'invalid_request_error', request: { headers: r.headers } } })

const channels: Channel[] = [
  {
    name: 'a 401 whose body echoes the request headers',
    provider: (key) => ({ apiKey: key }),
    script: (s) => s.error(401, echoHeaders),
    expectError: { name: 'ProviderAuthError', statusCode: 401, message: 'request rejected' },
  },
  {
    name: 'a 500 whose body echoes the request headers (retried, then exhausted)',
    provider: (key) => ({ apiKey: key }),
    script: (s) => s.error(500, echoHeaders).error(500, echoHeaders),
    retry: { maxAttempts: 2 },
    expectError: { name: 'RetriesExhaustedError', attempts: 2, lastError: expect.objectContaining({ statusCode: 500 }) },
  },
  {
    name: 'a 400 quoting the key',
    provider: (key) => ({ apiKey: key }),
    script: (s, key) => s.error(400, { error: { message: `Incorrect API key provided: ${key}. Check your key.`, type: 'invalid_request_error' } }),
    expectError: { name: 'APIError', statusCode: 400, message: expect.stringContaining('Incorrect API key provided: [redacted]') },
  },
  {
    name: 'an error chunk mid-stream quoting the Authorization header',
    provider: (key) => ({ apiKey: key }),
    script: (s) =>
      s.push({
        type: 'stream',
        chunks: [{ text: 'Hello ' }, { raw: (r) => JSON.stringify({ error: { message: `upstream refused ${String(r.headers.authorization)}`, type: 'invalid_request_error' } }) }],
        end: 'close',
      }),
    expectError: { name: 'APIError', message: expect.stringContaining('upstream refused Bearer [redacted]') },
  },
  {
    name: 'an x-api-key header echoed back',
    provider: (key) => ({ headers: { 'x-api-key': key } }),
    script: (s) => s.error(403, (r: RecordedRequest) => `forbidden; got x-api-key: ${String(r.headers['x-api-key'])}`),
    expectError: { name: 'ProviderAuthError', statusCode: 403 },
  },
  {
    name: 'a key in the URL query string echoed back',
    provider: (key) => ({ queryParams: { key } }),
    script: (s) => s.error(400, (r: RecordedRequest) => ({ error: { message: `bad request to ${r.url}`, type: 'invalid_request_error' } })),
    expectError: { name: 'APIError', statusCode: 400, message: expect.stringContaining('key=[redacted]') },
  },
  {
    name: 'an invalid key with a NUL (undici: "Bearer sk-…" is an invalid header value)',
    provider: (key) => ({ apiKey: key.replace('-', '-\u0000') }),
    script: () => {},
    expectError: { name: 'UnknownError', message: expect.stringContaining('Bearer [redacted]') },
  },
]

/** Everything of the database as text: every row of every table. */
async function dumpDatabase(database: string, schema: string | undefined): Promise<string> {
  if (testDialect === 'sqlite') {
    const db = new Database(database, { readonly: true })
    try {
      const tables = db.prepare("select name from sqlite_master where type = 'table'").all() as Array<{ name: string }>
      return tables.map((t) => `${t.name}: ${JSON.stringify(db.prepare(`select * from "${t.name}"`).all())}`).join('\n')
    } finally {
      db.close()
    }
  }
  const { Client } = await import('pg')
  const client = new Client({ connectionString: pgBaseUrl })
  await client.connect()
  try {
    const tables = await client.query('select table_name from information_schema.tables where table_schema = $1', [schema])
    const out: string[] = []
    for (const { table_name } of tables.rows) {
      const rows = await client.query(`select row_to_json(t)::text as row from "${schema}"."${table_name}" t`)
      out.push(`${table_name}: ${rows.rows.map((r) => r.row).join('\n')}`)
    }
    return out.join('\n')
  } finally {
    await client.end()
  }
}

/** Captures console output and stdout/stderr writes while `run` runs. */
async function captureOutput<T>(run: () => Promise<T>): Promise<{ result: T; output: string }> {
  const chunks: string[] = []
  const methods = ['log', 'error', 'warn', 'info', 'debug'] as const
  const spies = methods.map((m) => jest.spyOn(console, m).mockImplementation((...args: unknown[]) => void chunks.push(args.map(String).join(' '))))
  const writes = [process.stdout, process.stderr].map((stream) =>
    jest.spyOn(stream, 'write').mockImplementation(((chunk: unknown) => {
      chunks.push(String(chunk))
      return true
    }) as never),
  )
  try {
    return { result: await run(), output: chunks.join('\n') }
  } finally {
    for (const spy of [...spies, ...writes]) spy.mockRestore()
  }
}

function keyFor(mode: Mode): string {
  const tag = randomBytes(9).toString('hex')
  // Pieces of at least 8 characters, each searched for on its own.
  return mode === 'known shape, no option' ? `sk-tcLeakProbe${tag}Zq` : `opaque-tcLeakProbe${tag}Zq`
}

function pieces(key: string): string[] {
  return [key, key.slice(0, 12), key.slice(-12), key.slice(10, 30)]
}

const modes: Mode[] = ['known shape, no option', 'opaque key in redact.secrets']

describe.each(modes)('no secret leaves (%s)', (mode) => {
  let server: ScriptedServer
  let engine: Engine | undefined
  let fresh: ReturnType<typeof freshDatabase>
  beforeEach(async () => {
    server = await startScriptedServer()
    fresh = freshDatabase()
  })
  afterEach(async () => {
    await engine?.close()
    engine = undefined
    await server.close()
    await fresh.drop()
  })

  test.each(channels)('$name', async (channel) => {
    const key = keyFor(mode)
    const provider = createOpenAICompatible({ name: 'probe', baseURL: server.url, includeUsage: true, ...channel.provider(key) })
    channel.script(server, key)
    const { result: run, output } = await captureOutput(async () => {
      engine = await createEngine({
        database: fresh.database,
        model: provider('probe-model'),
        retry: { initialDelayMs: 1, maxDelayMs: 1, jitter: 0, ...channel.retry },
        ...(mode === 'opaque key in redact.secrets' ? { redact: { secrets: [key, key.replace('-', '-\u0000')] } } : {}),
      })
      const { events } = recordEvents(engine)
      const session = await engine.createSession({ title: 'secrets' })
      const turn = engine.prompt(session.id, 'hi')
      const done = await turn.done
      return { done, events: events as TurnchartEvent[], status: engine.status(session.id), turnRow: await engine.getTurn(turn.id), log: await engine.transitions(turn.id), messages: await engine.messages(session.id) }
    })
    // The channel really handed the key back (else the test proves nothing).
    const echoed = server.requests.length === 0 || JSON.stringify(server.requests).includes(key.slice(-12))
    expect(echoed).toBe(true)
    expect(run.done.outcome).toBe('failed')
    expect(run.done.error).toMatchObject(channel.expectError)

    await engine!.close()
    engine = undefined
    const places: Record<string, string> = {
      database: await dumpDatabase(fresh.database, fresh.schema),
      events: JSON.stringify(run.events),
      'turn.done': JSON.stringify(run.done),
      'engine reads': JSON.stringify([run.turnRow, run.log, run.messages, run.status]),
      console: output,
    }
    for (const [place, text] of Object.entries(places)) {
      for (const piece of pieces(key)) {
        if (text.includes(piece)) throw new Error(`the key (${piece}) leaked into ${place}: …${text.slice(Math.max(0, text.indexOf(piece) - 200), text.indexOf(piece) + 100)}…`)
      }
    }
    // The stored record stays useful: the error is on the message, with its name.
    expect(places.database).toContain(channel.expectError.name as string)
  })
})

test('a stored body keeps status, type and message around the redaction', async () => {
  const server = await startScriptedServer()
  const fresh = freshDatabase()
  const key = 'sk-tcUsefulProbe0123456789'
  const provider = createOpenAICompatible({ name: 'probe', baseURL: server.url, apiKey: key, includeUsage: true })
  server.error(401, (r: RecordedRequest) => ({ error: { message: 'Invalid API key', type: 'authentication_error', code: 'invalid_api_key', echo: r.headers.authorization } }))
  const engine = await createEngine({ database: fresh.database, model: provider('m') })
  try {
    const session = await engine.createSession()
    const done = await engine.prompt(session.id, 'hi').done
    expect(done.error).toMatchObject({ name: 'ProviderAuthError', statusCode: 401, message: 'Invalid API key' })
    expect(JSON.parse(done.error!.responseBody as string)).toEqual({
      error: { message: 'Invalid API key', type: 'authentication_error', code: 'invalid_api_key', echo: 'Bearer [redacted]' },
    })
  } finally {
    await engine.close()
    await server.close()
    await fresh.drop()
  }
})

test('a key where the stored body is cut (8 KB) is redacted before the cut, not half-kept', async () => {
  const server = await startScriptedServer()
  const fresh = freshDatabase()
  const key = 'opaque-tcCutProbe-0123456789abcdef'
  const provider = createOpenAICompatible({ name: 'probe', baseURL: server.url, apiKey: key, includeUsage: true })
  // The key straddles the 8,192-character limit of a stored body.
  const filler = 'x'.repeat(8 * 1024 - 40)
  server.error(400, `${filler} your key ${key} is not valid for this model`)
  const engine = await createEngine({ database: fresh.database, model: provider('m'), redact: { secrets: [key] } })
  try {
    const session = await engine.createSession()
    const done = await engine.prompt(session.id, 'hi').done
    const body = done.error!.responseBody as string
    expect(body.endsWith('…[truncated]')).toBe(true)
    expect(body).toContain('your key [redacted]')
    expect(JSON.stringify(await engine.messages(session.id))).not.toContain(key.slice(0, 12))
  } finally {
    await engine.close()
    await server.close()
    await fresh.drop()
  }
})

test('a replaced errorClassifier that returns the key: redacted before any row or event', async () => {
  const server = await startScriptedServer()
  const fresh = freshDatabase()
  const key = 'opaque-tcClassifierProbe-0123456789'
  const provider = createOpenAICompatible({ name: 'probe', baseURL: server.url, apiKey: key, includeUsage: true })
  server.error(400, { error: { message: 'nope' } })
  const engine = await createEngine({
    database: fresh.database,
    model: provider('m'),
    redact: { secrets: [key] },
    errorClassifier: () => ({ kind: 'fatal', error: { name: 'APIError', message: `rejected key ${key}`, isRetryable: false, detail: { key } }, headers: {} }),
  })
  const { events } = recordEvents(engine)
  try {
    const session = await engine.createSession()
    const done = await engine.prompt(session.id, 'hi').done
    expect(done.error).toMatchObject({ name: 'APIError', message: 'rejected key [redacted]' })
    await engine.close()
    const everything = [await dumpDatabase(fresh.database, fresh.schema), JSON.stringify(events), JSON.stringify(done)].join('\n')
    expect(everything).not.toContain(key.slice(0, 12))
    expect(everything).not.toContain(key.slice(-12))
  } finally {
    await engine.close()
    await server.close()
    await fresh.drop()
  }
})

test('MCP transports: header values reach the server and no row, event, read or log line (the engine\'s mcp option)', async () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startHttp, newState } = require('../fixtures/mcp/mcp-test-server.cjs')
  const mcp = await startHttp(newState())
  const server = await startScriptedServer()
  const fresh = freshDatabase()
  const token = `opaque-tcMcpProbe${randomBytes(9).toString('hex')}Zq`
  const other = `opaque-tcMcpOther${randomBytes(9).toString('hex')}Zq`
  const provider = createOpenAICompatible({ name: 'probe', baseURL: server.url, includeUsage: true })
  // The server's error quotes both headers back; a lookup succeeds; then the server is gone (its connection error).
  server.tool('echo_auth', {}, { id: 'call_echo' })
  server.tool('lookup', { q: 'x' }, { id: 'call_lookup' })
  server.text('done')
  let engine: Engine | undefined
  try {
    const { result: run, output } = await captureOutput(async () => {
      engine = await createEngine({
        database: fresh.database,
        model: provider('m'),
        mcp: { servers: { site: { transport: { type: 'http', url: mcp.url, headers: { Authorization: `Bearer ${token}`, 'x-mcp-token': other } }, approval: 'never' } } },
      })
      const { events } = recordEvents(engine)
      const session = await engine.createSession()
      const turn = engine.prompt(session.id, 'who am I')
      const done = await turn.done
      return { done, events: events as TurnchartEvent[], turnRow: await engine.getTurn(turn.id), log: await engine.transitions(turn.id), messages: await engine.messages(session.id), config: engine.config }
    })
    expect(run.done.outcome).toBe('completed')
    // The headers were sent, and the server echoed them into its error (else the test proves nothing).
    expect(mcp.state.headers.some((h: Record<string, string>) => h.authorization === `Bearer ${token}` && h['x-mcp-token'] === other)).toBe(true)
    const echo = run.messages.flatMap((m) => m.parts).find((p) => p.type === 'tool' && p.tool === 'echo_auth')
    expect(echo).toMatchObject({ state: { status: 'error', error: 'unauthorized: got [redacted] and [redacted]' } })
    await engine!.close()
    engine = undefined
    const places: Record<string, string> = {
      database: await dumpDatabase(fresh.database, fresh.schema),
      events: JSON.stringify(run.events),
      'turn.done': JSON.stringify(run.done),
      'engine reads': JSON.stringify([run.turnRow, run.log, run.messages, run.config]),
      'model requests': JSON.stringify(server.requests.map((r) => r.body)),
      console: output,
    }
    for (const [place, text] of Object.entries(places)) {
      for (const piece of [...pieces(token), ...pieces(other)]) {
        if (text.includes(piece)) throw new Error(`an MCP header (${piece}) leaked into ${place}: …${text.slice(Math.max(0, text.indexOf(piece) - 200), text.indexOf(piece) + 100)}…`)
      }
    }
  } finally {
    await engine?.close()
    await server.close()
    await mcp.close()
    await fresh.drop()
  }
})
