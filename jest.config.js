/**
 * Two jest projects: `sqlite` runs every test; `postgres` runs the store suites and the
 * scenarios that touch dialect-specific code (`postgresSuites` below) again with the harness on PostgreSQL (TURNCHART_PG_URL, default
 * postgres://postgres@127.0.0.1:5432/test; a fresh schema per harness). When nothing answers at
 * that URL's host and port, the postgres project runs test/support/postgres-absent.suite.ts
 * instead: one skipped test per suite it would have run, the reason in its name (failed under
 * CI=true, where PostgreSQL is always there). TURNCHART_DIALECT=sqlite|postgres runs one half only. The store conformance
 * suite (test/store/conformance) runs its three stores (memory, SQLite, PostgreSQL when a server
 * is there) in one project.
 */
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')

const common = {
  testEnvironment: 'node',
  // esbuild, one file at a time (test/support/esbuild-transform.js); @statelyai/inspect is ESM
  // only: compiled to CommonJS for jest too (test/inspect).
  transform: { '^.+\\.(ts|m?js)$': '<rootDir>/test/support/esbuild-transform.js' },
  transformIgnorePatterns: ['/node_modules/(?!@statelyai/inspect/)'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json', 'node'],
  // test/compat-v7 is an app of its own (ai v7, Node 22), run by `npm run test:compat`.
  // test/restate/node_modules holds restate-server and Node 22 (test/support/restate.ts), no modules of the tests.
  modulePathIgnorePatterns: ['<rootDir>/test/compat-v7/', '<rootDir>/test/restate/node_modules/'],
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/compat-v7/'],
}

function answers(host, port, timeoutMs = 500) {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    const done = (ok) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/**
 * Tests that run every store themselves (the store conformance suite runs memory, SQLite and
 * PostgreSQL in each of its files) or none (the memory store's own tests): the postgres project
 * would only run them a second time.
 */
const storeSuites = ['<rootDir>/test/store/conformance/', '<rootDir>/test/store/memory-store.test.ts']

/**
 * What the postgres project runs again on PostgreSQL: the store's transactions, rollbacks,
 * durability and round trips, and the scenarios whose queries or concurrency differ by dialect
 * (the queue's subqueries, history operations, several engines on one database, approvals
 * across engines, PostgreSQL's notifications between engines). The crash and multi-engine tests run PostgreSQL themselves in the sqlite
 * project (test/crash), and every other scenario runs on SQLite only.
 */
const postgresScenarios = ['api', 'approval', 'approval-receipts', 'parked-turns', 'close-approval', 'conversation', 'queue', 'steering', 'ui-resume-across-engines', 'no-silent-loss', 'push-across-engines', 'run-trees', 'run-trees-engines', 'tenants', 'sleep', 'schedules', 'circuit-breaker', 'rate-limits']
const postgresSuites = ['**/test/store/**/*.test.ts', `**/test/scenarios/{${postgresScenarios.join(',')}}.test.ts`]

/** The files the postgres project runs (relative to the repository): what it reports as skipped without a server. */
function postgresSuiteFiles(only) {
  const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(path.join(dir, entry.name)) : [path.join(dir, entry.name)]))
  const skippedStoreSuites = only === 'postgres' ? [] : storeSuites.map((suite) => suite.replace('<rootDir>/', ''))
  const store = walk(path.join(__dirname, 'test/store'))
    .map((file) => path.relative(__dirname, file))
    .filter((file) => file.endsWith('.test.ts') && !skippedStoreSuites.some((suite) => file.startsWith(suite)))
  return [...store, ...postgresScenarios.map((name) => `test/scenarios/${name}.test.ts`)].sort()
}

/** host and port of the PostgreSQL URL the tests use. */
function postgresAddress() {
  const { hostname, port } = new URL(process.env.TURNCHART_PG_URL || 'postgres://postgres@127.0.0.1:5432/test')
  return { host: hostname, port: Number(port || 5432) }
}

/** @returns {Promise<import('jest').Config>} */
module.exports = async () => {
  const only = process.env.TURNCHART_DIALECT
  const { host, port } = postgresAddress()
  const postgresAvailable = await answers(host, port)
  // The conformance suite reads this to run or skip its PostgreSQL store.
  const globals = { TURNCHART_PG_AVAILABLE: postgresAvailable }
  const projects = []
  if (only !== 'postgres') {
    projects.push({ ...common, displayName: 'sqlite', roots: ['<rootDir>/test'], testMatch: ['**/*.test.ts'], globals })
  }
  if (only !== 'sqlite') {
    if (postgresAvailable) {
      projects.push({
        ...common,
        displayName: 'postgres',
        roots: ['<rootDir>/test/scenarios', '<rootDir>/test/store'],
        // The engine runs one code path on both dialects (the conformance suite holds the store
        // to it on each): this project runs again only what touches dialect-specific code.
        testMatch: postgresSuites,
        // Run alone (TURNCHART_DIALECT=postgres), this project runs the store suites once.
        testPathIgnorePatterns: only === 'postgres' ? common.testPathIgnorePatterns : [...common.testPathIgnorePatterns, ...storeSuites],
        globals: { ...globals, TURNCHART_DIALECT: 'postgres' },
      })
    } else {
      projects.push({
        ...common,
        displayName: 'postgres',
        roots: ['<rootDir>/test/support'],
        testMatch: ['**/postgres-absent.suite.ts'],
        globals: { ...globals, TURNCHART_DIALECT: 'postgres', TURNCHART_PG_ABSENT: { address: `${host}:${port}`, suites: postgresSuiteFiles(only) } },
      })
    }
  }
  return {
    projects,
    testTimeout: 20000,
    // Both cores: most suites wait on sockets, child processes and the database, not the CPU.
    maxWorkers: 2,
    // The longest suites first, so none runs alone at the end (test/support/slow-first-sequencer.js).
    testSequencer: '<rootDir>/test/support/slow-first-sequencer.js',
    // The children tests fork (the CLI, the crash tests' engines) bundled once per run.
    globalSetup: '<rootDir>/test/support/global-setup.js',
    globalTeardown: '<rootDir>/test/support/global-teardown.js',
  }
}
