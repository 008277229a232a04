#!/usr/bin/env node
/**
 * The `turnchart` command. Bad arguments print the usage on stderr and exit with status 2;
 * other failures print the error on stderr and exit with status 1.
 */
import { NotATurnchartDatabaseError } from '../errors'
import { UsageError } from './args'
import { chartCommand } from './chart'
import { demoCommand } from './demo'
import { CliError, type CliIO } from './io'
import { replayCommand } from './replay'
import { sessionsCommand } from './sessions'
import { showCommand } from './show'
import { packageVersion } from './version'
import { viewCommand } from './view'
import { pruneCommand, recoverCommand } from './write-commands'

export const usage = `usage: turnchart <command> [options]

commands:
  demo [--inspect] [--inspect-port <n>] [--db <file>]
                              run an agent session end to end (a scripted server, or
                              TURNCHART_BASE_URL + TURNCHART_MODEL [+ TURNCHART_API_KEY])
  chart [--json]              the turn chart as Mermaid, or as JSON for the Stately editor
  help, --help                this text
  --version                   turnchart's version

read-only (never migrate, recover or write; <db> is a SQLite file or a postgres:// URL):
  sessions <db> [--json]      list the sessions of a database
  show <db> <session> [--json]
                              a session's conversation: messages, parts, turns and states
  replay <db> <turn> [--json] a turn's transition timeline, replayed through the chart
  view <db> [--port <n>]      serve an offline viewer on 127.0.0.1: sessions, conversations,
                              each turn's path through the chart (live for running turns)

writing (change the database):
  recover <db> [--json]       end as aborted the unfinished turns of processes that died
                              (the app's own createEngine resumes them instead)
  prune <db> --older-than <age>
                              delete the transition logs of turns ended before <age> ago
                              (30d, 12h, 90m); messages and parts stay

TURNCHART_DEBUG=1 prints stack traces.
`

const commands: Record<string, (argv: string[], io: CliIO) => Promise<number>> = {
  demo: demoCommand,
  sessions: sessionsCommand,
  show: showCommand,
  replay: replayCommand,
  chart: chartCommand,
  recover: recoverCommand,
  prune: pruneCommand,
  view: viewCommand,
}

/**
 * Runs the CLI and resolves with the exit status.
 *
 * @example
 * await runCli(['chart'], { stdout: process.stdout, stderr: process.stderr, env: process.env }) // 0
 */
export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv
  if (name === 'help' || name === '--help' || name === '-h') {
    io.stdout.write(usage)
    return 0
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    io.stdout.write(`${packageVersion()}\n`)
    return 0
  }
  const command = name === undefined ? undefined : commands[name]
  try {
    if (!command) throw new UsageError(name === undefined ? 'missing command' : `unknown command ${name}`)
    return await command(rest, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`turnchart: ${error.message}\n\n${usage}`)
      return 2
    }
    const message =
      error instanceof CliError || NotATurnchartDatabaseError.isInstance(error) ? error.message
      : error instanceof Error ? (io.env.TURNCHART_DEBUG ? error.stack ?? error.message : `${error.name}: ${error.message}`)
      : String(error)
    io.stderr.write(`turnchart: ${message}\n`)
    return 1
  }
}

if (require.main === module) {
  runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env }).then((code) => {
    process.exitCode = code
    // Whatever still holds the event loop (an inspector's browser socket), do not hang.
    setTimeout(() => process.exit(code), 2000).unref()
  })
}
