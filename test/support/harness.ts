/**
 * Test harness: a scripted OpenAI-compatible server on loopback and an engine talking to it
 * through the real AI SDK provider, plus helpers to await events instead of sleeping.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine, type Engine, type EngineOptions, type TurnchartEvent } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'

export interface Harness {
  server: ScriptedServer
  engine: Engine
  events: TurnchartEvent[]
  /** Resolves with the first event (past or future) matching `predicate`. */
  waitForEvent<T extends TurnchartEvent>(predicate: (event: TurnchartEvent) => event is T, timeoutMs?: number): Promise<T>
  waitForEvent(predicate: (event: TurnchartEvent) => boolean, timeoutMs?: number): Promise<TurnchartEvent>
  dbPath: string
  close(): Promise<void>
}

export function modelFor(server: ScriptedServer, name = 'test-model') {
  const provider = createOpenAICompatible({ name: 'scripted', baseURL: server.url, apiKey: 'test-key', includeUsage: true })
  return provider(name)
}

export function tempDbPath(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-'))
  return path.join(dir, 'test.db')
}

/** Fast retries by default so tests do not wait seconds; tests of delays set their own. */
export async function createHarness(options: Partial<EngineOptions> = {}): Promise<Harness> {
  const server = await startScriptedServer()
  const dbPath = tempDbPath()
  const engine = await createEngine({
    database: dbPath,
    model: modelFor(server),
    limits: { context: 100_000, output: 10_000 },
    retry: { initialDelayMs: 1, maxDelayMs: 5, jitter: 0 },
    ...options,
  })
  const events: TurnchartEvent[] = []
  const waiters: Array<{ predicate: (e: TurnchartEvent) => boolean; resolve: (e: TurnchartEvent) => void }> = []
  engine.subscribe((event) => {
    events.push(event)
    for (const waiter of [...waiters]) {
      if (waiter.predicate(event)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve(event)
      }
    }
  })
  const waitForEvent = (predicate: (event: TurnchartEvent) => boolean, timeoutMs = 10_000) => {
    const seen = events.find(predicate)
    if (seen) return Promise.resolve(seen)
    return new Promise<TurnchartEvent>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching event within ${timeoutMs} ms; saw ${events.map((e) => e.type).join(', ')}`)), timeoutMs)
      waiters.push({ predicate, resolve: (e) => { clearTimeout(timer); resolve(e) } })
    })
  }
  return {
    server,
    engine,
    events,
    waitForEvent: waitForEvent as Harness['waitForEvent'],
    dbPath,
    async close() {
      await engine.close()
      await server.close()
      fs.rmSync(path.dirname(dbPath), { recursive: true, force: true })
    },
  }
}

/** Assistant parts of a session, all messages flattened. */
export async function assistantParts(engine: Engine, sessionId: string) {
  const messages = await engine.messages(sessionId)
  return messages.filter((m) => m.info.role === 'assistant').flatMap((m) => m.parts)
}
