/**
 * Errors that no retry can fix fail at once, with a message naming the cause: a model URL that
 * fetch refuses to send to (a blocked port, an unknown scheme, an invalid URL), and a directory
 * given as the SQLite database (SQLite itself says only "disk I/O error").
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine, InvalidOptionError, type Engine } from '../../src'
import { createHarness, type Harness } from '../support/harness'

let h: Harness | undefined
afterEach(async () => {
  await h?.close()
  h = undefined
})

const model = (baseURL: string) => createOpenAICompatible({ name: 'unreachable', baseURL, includeUsage: true })('m')

test.each([
  ['a port fetch blocks ("bad port")', 'http://127.0.0.1:6000/v1', /^bad port: fetch refuses to connect to this port/],
  ['an unknown scheme', 'ftp://127.0.0.1/v1', /^unknown scheme: fetch only speaks http: and https:/],
  ['an invalid URL', 'http://127.0.0.1:99999/v1', /^invalid URL: the model's request URL cannot be parsed/],
])("%s fails the turn at its first attempt, saying why", async (_name, baseURL, message) => {
  // The default retry policy (5 attempts, 15 s of backoff): a retried failure would time the test out.
  h = await createHarness({ model: model(baseURL), retry: {} })
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  const result = await turn.done
  expect(result.outcome).toBe('failed')
  expect(result.error).toMatchObject({ name: 'UnknownError', message: expect.stringMatching(message) })
  const rows = await h.engine.transitions(turn.id)
  expect(rows.map((r) => r.to)).toEqual(['step-gate', 'streaming', 'failed'])
  expect(h.events.some((e) => e.type === 'session.status' && e.status.type === 'retry')).toBe(false)
}, 10_000)

test('a directory given as the SQLite database is refused when the engine opens, naming the cause', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-dir-'))
  try {
    let engine: Engine | undefined
    const error = await createEngine({ database: dir, model: model('http://127.0.0.1:1/v1') }).then(
      (e) => {
        engine = e
        return undefined
      },
      (e: unknown) => e,
    )
    await engine?.close()
    expect(InvalidOptionError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ option: 'database', message: expect.stringContaining('not a directory') })
    expect(String((error as Error).message)).not.toMatch(/disk I\/O error/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
