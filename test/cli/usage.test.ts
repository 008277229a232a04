/** Bad arguments print the usage on stderr and exit with status 2; other failures exit with 1. */
import { runCli } from './run-cli'

test.concurrent.each([
  ['no command', []],
  ['an unknown command', ['bogus']],
  ['sessions without a database', ['sessions']],
  ['show without a session', ['show', 'a.db']],
  ['replay with an extra argument', ['replay', 'a.db', 't', 'extra']],
  ['chart with an unknown flag', ['chart', '--svg']],
  ['demo with a flag value missing', ['demo', '--db']],
])('%s: usage on stderr, exit status 2', async (_name, args) => {
  const run = await runCli(args)
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr).toContain('usage: turnchart <command>')
}, 60_000)

test('help prints the usage on stdout, exit status 0', async () => {
  const run = await runCli(['help'])
  expect(run.code).toBe(0)
  expect(run.stdout).toContain('turnchart <command>')
}, 60_000)

test('a database that does not exist is an error (exit 1), and no file is created', async () => {
  const run = await runCli(['sessions', '/nonexistent/turnchart.db'])
  expect(run.code).toBe(1)
  expect(run.stderr).toContain('no such database: /nonexistent/turnchart.db')
}, 60_000)

test('the real-endpoint demo without TURNCHART_MODEL says what is missing (exit 1)', async () => {
  const run = await runCli(['demo'], { TURNCHART_BASE_URL: 'http://127.0.0.1:9/v1' })
  expect(run.code).toBe(1)
  expect(run.stderr).toContain('TURNCHART_MODEL')
}, 60_000)
