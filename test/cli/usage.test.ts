/**
 * Bad arguments print what is wrong and the command's own synopsis on stderr (not the whole
 * help) and exit with status 2; other failures exit with 1.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { runCli } from './run-cli'

const more = '(turnchart help: every command and option)\n'

test.concurrent.each([
  ['no command', [], 'missing command\ncommands: demo, sessions, schedules, show, replay, rerun, diff, eval, chart, recover, prune, backup, view'],
  ['an unknown command', ['bogus'], 'unknown command bogus\ncommands: demo, sessions, schedules, show, replay, rerun, diff, eval, chart, recover, prune, backup, view'],
  ['sessions without a database', ['sessions'], 'missing argument <db>\nusage: turnchart sessions <db> [--json]'],
  ['show without a session', ['show', 'a.db'], 'missing argument <session>\nusage: turnchart show <db> <session> [--json]'],
  ['replay with an extra argument', ['replay', 'a.db', 't', 'extra'], 'unexpected argument extra\nusage: turnchart replay <db> <turn> [--json]'],
  ['chart with an unknown flag', ['chart', '--svg'], 'unknown option --svg\nusage: turnchart chart [--json]'],
  ['demo with a flag value missing', ['demo', '--db'], '--db needs a value\nusage: turnchart demo [--inspect] [--inspect-port <n>] [--db <file or URL>]'],
  [
    'rerun with a bad --tools',
    ['rerun', 'a.db', 't', '--tools', 'some'],
    '--tools is recorded or live, not some\nusage: turnchart rerun <db> <turn> [--json] [--system <text>] [--model <url> [--model-id <id>]] [--tools recorded|live [--tools-module <file>]] [--out <file>] [--after-divergence stop|live] [--tool-drift stop|continue] [--steps]',
  ],
])('%s: the error and a short hint on stderr, exit status 2', async (_name, args, hint) => {
  const run = await runCli(args)
  expect(run.code).toBe(2)
  expect(run.stdout).toBe('')
  expect(run.stderr).toBe(`turnchart: ${hint}\n${more}`)
}, 60_000)

test('a folder given as <db> is refused by the argument\'s name, not an API option', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-folder-'))
  try {
    const run = await runCli(['sessions', dir])
    expect(run).toMatchObject({ code: 1, stdout: '' })
    expect(run.stderr).toBe(`turnchart: invalid <db>: expected a SQLite file path, not a directory (name a file inside it, e.g. agent.db), got ${JSON.stringify(dir)}\n`)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
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
