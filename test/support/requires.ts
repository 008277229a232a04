/**
 * Tests that need something this machine may not have (a PostgreSQL server, Chromium, Node 22).
 * Without it such a test is reported as skipped, the reason in its name, instead of returning
 * early and counting as passed; under `CI=true` it fails instead (CI always has them: a skip there
 * would leave the guarantee untested while the run is green).
 *
 *   itPostgres('…', async () => …)            // test / skipped / failed
 *   testNeeding(chromium)('…', async () => …)
 *   (dialect === 'postgres' ? itPostgres : test).each(cases)('…', …)
 */
import fs from 'node:fs'
import { pgBaseUrl } from './harness'

export interface Requirement {
  /** What is needed, for the test's name: "PostgreSQL", "Chromium". */
  what: string
  available: boolean
  /** Why it is missing, when it is. */
  reason: string
}

/** Whether this run is CI's (`CI=true`, as GitHub Actions and most CI services set it). */
export const inCi = Boolean(process.env.CI) && process.env.CI !== 'false' && process.env.CI !== '0'

/** The name a skipped test shows: its own, then why it did not run (jest's `%` placeholders kept). */
function skippedName(name: string, requirement: Requirement): string {
  return `${name} [skipped: ${requirement.reason.replace(/%/g, '%%')}]`
}

function missing(requirement: Requirement): () => never {
  return () => {
    throw new Error(`${requirement.what} is required under CI=true: ${requirement.reason}`)
  }
}

/** `test` when `requirement` is there; otherwise a `test` whose tests are skipped (or fail under CI) with the reason. */
export function testNeeding(requirement: Requirement): jest.It {
  if (requirement.available) return test
  const absent = ((name: string) => {
    if (inCi) test(name, missing(requirement))
    else test.skip(skippedName(name, requirement), () => {})
  }) as unknown as jest.It
  const each = ((table: readonly unknown[]) => (name: string) => {
    if (inCi) test.each(table as unknown[][])(name, missing(requirement))
    else test.skip.each(table as unknown[][])(skippedName(name, requirement), () => {})
  }) as unknown as jest.Each
  return Object.assign(absent, { each, only: absent, concurrent: absent, failing: absent, skip: test.skip, todo: test.todo })
}

/** Whether jest.config.js found a PostgreSQL server at TURNCHART_PG_URL (default 127.0.0.1:5432). */
export const postgres: Requirement = {
  what: 'PostgreSQL',
  available: (globalThis as { TURNCHART_PG_AVAILABLE?: boolean }).TURNCHART_PG_AVAILABLE === true,
  reason: `no PostgreSQL answers at ${postgresAddress(pgBaseUrl)} (TURNCHART_PG_URL)`,
}

/** A test that needs a PostgreSQL server. */
export const itPostgres = testNeeding(postgres)

/** `test` on SQLite; on PostgreSQL, a test that needs the server. */
export function testOn(dialect: 'sqlite' | 'postgres'): jest.It {
  return dialect === 'postgres' ? itPostgres : test
}

/** Debian's Chromium, which the browser tests drive (.ci/run installs it). */
export function chromiumBinary(executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'): Requirement & { executablePath: string } {
  const available = fs.existsSync(executablePath)
  return { what: 'Chromium', available, reason: `${executablePath} is missing (.ci/run installs Debian's chromium)`, executablePath }
}

/** host:port of a PostgreSQL URL, without its user or password. */
export function postgresAddress(url: string): string {
  const { hostname, port } = new URL(url)
  return `${hostname}:${port || 5432}`
}
