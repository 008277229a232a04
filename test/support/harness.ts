/**
 * Test harness: a scripted OpenAI-compatible server on loopback and an engine talking to it
 * through the real AI SDK provider, plus helpers to await events instead of sleeping.
 *
 * The dialect comes from the jest project (`globals.TURNCHART_DIALECT`, see jest.config.js)
 * or the `TURNCHART_DIALECT` env var: `sqlite` (default: a temp file per harness) or
 * `postgres` (a fresh schema per harness in `TURNCHART_PG_URL`, default
 * postgres://postgres@127.0.0.1:5432/test, dropped at close).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createGoogleGenerativeAI } from '@ai-sdk/google'
import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine, type Engine, type EngineOptions, type TurnchartEvent } from '../../src'
import { recordEvents } from './event-log'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'

export interface Harness {
  server: ScriptedServer
  engine: Engine
  events: TurnchartEvent[]
  /** Resolves with the first event (past or future) matching `predicate`. */
  waitForEvent<T extends TurnchartEvent>(predicate: (event: TurnchartEvent) => event is T, timeoutMs?: number): Promise<T>
  waitForEvent(predicate: (event: TurnchartEvent) => boolean, timeoutMs?: number): Promise<TurnchartEvent>
  /** What `database` was: a SQLite file path, or a PostgreSQL URL with `?schema=`. Reopen with it. */
  dbPath: string
  dialect: TestDialect
  close(): Promise<void>
}

export type TestDialect = 'sqlite' | 'postgres'

/** The dialect this test run uses. */
export const testDialect: TestDialect =
  ((globalThis as { TURNCHART_DIALECT?: string }).TURNCHART_DIALECT ?? process.env.TURNCHART_DIALECT) === 'postgres' ? 'postgres' : 'sqlite'

/** `test` on SQLite runs, `test.skip` on PostgreSQL runs: for tests of the file, pragmas, SqliteDialect. */
export const sqliteOnly: jest.It = testDialect === 'sqlite' ? test : test.skip
/** `test` on PostgreSQL runs only. */
export const postgresOnly: jest.It = testDialect === 'postgres' ? test : test.skip

export const pgBaseUrl = process.env.TURNCHART_PG_URL || 'postgres://postgres@127.0.0.1:5432/test'

/** Whether a PostgreSQL server answers at `pgBaseUrl` (tests that need one skip, saying so, when none does). */
export async function postgresAnswers(): Promise<boolean> {
  const { Client } = await import('pg')
  const client = new Client({ connectionString: pgBaseUrl, connectionTimeoutMillis: 1000 })
  try {
    await client.connect()
    await client.end()
    return true
  } catch {
    return false
  }
}

/** `base` with query parameters added (keeps the ones already there). */
export function withParams(base: string, params: Record<string, string>): string {
  const url = new URL(base)
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value)
  return url.toString()
}

let schemaCounter = 0

/** A fresh, empty PostgreSQL schema name (not created: the migration creates it). */
export function freshSchemaName(): string {
  return `tc_test_${process.pid}_${Date.now().toString(36)}_${schemaCounter++}`
}

/** Drops PostgreSQL schemas (cascade), on a connection of its own. */
export async function dropSchemas(...schemas: string[]): Promise<void> {
  const { Client } = await import('pg')
  const client = new Client({ connectionString: pgBaseUrl })
  await client.connect()
  try {
    for (const schema of schemas) await client.query(`drop schema if exists "${schema}" cascade`)
  } finally {
    await client.end()
  }
}

/**
 * A fresh database for this run's dialect: a temp SQLite file, or a new schema on PostgreSQL.
 * `database` is what to pass as the `database` option; `drop()` removes it.
 */
export function freshDatabase(): { database: string; schema?: string; drop(): Promise<void> } {
  if (testDialect === 'postgres') {
    const schema = freshSchemaName()
    return { database: withParams(pgBaseUrl, { schema }), schema, drop: () => dropSchemas(schema) }
  }
  const file = tempDbPath()
  return { database: file, drop: async () => fs.rmSync(path.dirname(file), { recursive: true, force: true }) }
}

export function modelFor(server: ScriptedServer, name = 'test-model') {
  const provider = createOpenAICompatible({ name: 'scripted', baseURL: server.url, apiKey: 'test-key', includeUsage: true })
  return provider(name)
}

export function tempDbPath(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-'))
  return path.join(dir, 'test.db')
}

/** An Anthropic model (`@ai-sdk/anthropic`) talking to the scripted server's Messages protocol. */
export function anthropicModelFor(server: ScriptedServer, name = 'claude-test') {
  return createAnthropic({ baseURL: server.url, apiKey: 'test-key' })(name)
}

/** A Gemini model (`@ai-sdk/google`) talking to the scripted server's streamGenerateContent protocol. */
export function googleModelFor(server: ScriptedServer, name = 'gemini-test') {
  return createGoogleGenerativeAI({ baseURL: server.url, apiKey: 'test-key' })(name)
}

/** An OpenAI Responses model (`@ai-sdk/openai`) talking to the scripted server's Responses protocol. */
export function openaiResponsesModelFor(server: ScriptedServer, name = 'gpt-test') {
  return createOpenAI({ baseURL: server.url, apiKey: 'test-key' }).responses(name)
}

/**
 * Fast retries by default so tests do not wait seconds; tests of delays set their own.
 * `model` picks the provider (default: openai-compatible, `modelFor`).
 */
export async function createHarness(
  options: Partial<EngineOptions> | ((server: ScriptedServer) => Partial<EngineOptions>) = {},
  model: (server: ScriptedServer) => EngineOptions['model'] = modelFor,
): Promise<Harness> {
  const server = await startScriptedServer()
  if (typeof options === 'function') options = options(server)
  const fresh = freshDatabase()
  const dbPath = fresh.database
  const engine = await createEngine({
    database: dbPath,
    model: model(server),
    limits: { context: 100_000, output: 10_000 },
    retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
    ...options,
  })
  const { events, waitFor: waitForEvent } = recordEvents(engine)
  return {
    server,
    engine,
    events,
    waitForEvent: waitForEvent as Harness['waitForEvent'],
    dbPath,
    dialect: testDialect,
    async close() {
      await engine.close()
      await server.close()
      await fresh.drop()
    },
  }
}

/** Assistant parts of a session, all messages flattened. */
export async function assistantParts(engine: Engine, sessionId: string) {
  const messages = await engine.messages(sessionId)
  return messages.filter((m) => m.info.role === 'assistant').flatMap((m) => m.parts)
}
