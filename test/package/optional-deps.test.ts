/**
 * The optional pieces say what to install when they are missing: better-sqlite3 (an optional
 * dependency: a PostgreSQL-only app may omit it) and the demo's provider
 * @ai-sdk/openai-compatible (an optional peer). What is missing is simulated at the loader,
 * since this repository has both installed.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine, InvalidOptionError } from '../../src'
import type { DemoProvider } from '../../src/cli/demo'
import { sqliteLoader } from '../../src/store/sqlite/open-sqlite'

// Checked by `npm run typecheck`: the provider fits the type the demo declares for it (its
// published types do not name the optional peer).
export const demoProvider: DemoProvider = createOpenAICompatible

const notFound = (name: string) => Object.assign(new Error(`Cannot find module '${name}'`), { code: 'MODULE_NOT_FOUND' })

test('without better-sqlite3, a SQLite database is an InvalidOptionError that says what to install', async () => {
  const load = sqliteLoader.load
  sqliteLoader.load = () => {
    throw notFound('better-sqlite3')
  }
  try {
    const error = await createEngine({ database: ':memory:', model: { specificationVersion: 'v3', provider: 'test', modelId: 'test', doStream: async () => ({}) } as never }).catch((e: unknown) => e)
    expect(InvalidOptionError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ option: 'database' })
    expect((error as Error).message).toContain('npm install better-sqlite3')
  } finally {
    sqliteLoader.load = load
  }
})

test('without @ai-sdk/openai-compatible, the demo says what to install', () => {
  jest.isolateModules(() => {
    jest.doMock('@ai-sdk/openai-compatible', () => {
      throw notFound('@ai-sdk/openai-compatible')
    })
    const { loadDemoProvider } = require('../../src/cli/demo')
    expect(() => loadDemoProvider()).toThrow('the demo needs the optional peer dependency @ai-sdk/openai-compatible: npm install @ai-sdk/openai-compatible@^2')
    jest.dontMock('@ai-sdk/openai-compatible')
  })
})
