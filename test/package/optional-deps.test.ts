/**
 * The optional pieces say what to install when they are missing: better-sqlite3 (an optional
 * dependency: a PostgreSQL-only app may omit it) and the demo's provider
 * @ai-sdk/openai-compatible (an optional peer). What is missing is simulated at the loader,
 * since this repository has both installed.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createEngine, InvalidOptionError } from '../../src'
import type { DemoProvider } from '../../src/cli/demo'
import { sqliteLoader } from '../../src/store/sqlite/open-sqlite'
import { mcpLoader } from '../../src/tools/mcp-connection'

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
    // The default database is SQLite too: the message names node:sqlite (this Node is older than 22.13) and the store that needs nothing native.
    expect((error as Error).message).toContain(`the default database, ':memory:', is SQLite too: on Node.js 22.13 or later it uses the built-in node:sqlite instead, but this is ${process.version}; for one in memory with nothing native, pass \`database: new MemoryStore()\``)
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

test('better-sqlite3 built for another Node.js (its native module loads at the first connection): an InvalidOptionError with the rebuild command', async () => {
  const load = sqliteLoader.load
  // What Node throws when better-sqlite3 loads a better_sqlite3.node compiled for Node 22 (ABI 127) under another Node.
  const abiMismatch = Object.assign(
    new Error(
      "The module '/app/node_modules/better-sqlite3/build/Release/better_sqlite3.node'\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 127. This version of Node.js requires\n" +
        `NODE_MODULE_VERSION ${process.versions.modules}. Please try re-compiling or re-installing\nthe module (for instance, using \`npm rebuild\` or \`npm install\`).`,
    ),
    { code: 'ERR_DLOPEN_FAILED' },
  )
  sqliteLoader.load = () =>
    class {
      constructor() {
        throw abiMismatch
      }
    } as never
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-abi-'))
  try {
    const error = await createEngine({ database: path.join(dir, 'app.db'), model: { specificationVersion: 'v3', provider: 'test', modelId: 'test', doStream: async () => ({}) } as never }).catch((e: unknown) => e)
    expect(InvalidOptionError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ option: 'database' })
    expect((error as Error).message).toContain(`better-sqlite3 built for this Node.js (${process.version}, NODE_MODULE_VERSION ${process.versions.modules}); it was built for another one (NODE_MODULE_VERSION 127): run \`npm rebuild better-sqlite3\``)
  } finally {
    sqliteLoader.load = load
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('without @ai-sdk/mcp, the mcp option is an InvalidOptionError that says what to install', async () => {
  const require = mcpLoader.require
  mcpLoader.require = (id) => {
    throw notFound(id)
  }
  try {
    const error = await createEngine({
      database: ':memory:',
      model: { specificationVersion: 'v3', provider: 'test', modelId: 'test', doStream: async () => ({}) } as never,
      mcp: { servers: { docs: { transport: { type: 'http', url: 'http://127.0.0.1:9/mcp' }, reconnect: { attempts: 1 } } } },
    }).catch((e: unknown) => e)
    expect(InvalidOptionError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ option: 'mcp' })
    expect((error as Error).message).toContain('npm install @ai-sdk/mcp')
  } finally {
    mcpLoader.require = require
  }
})
