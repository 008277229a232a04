#!/usr/bin/env node
/**
 * The `turnchart` command. Bad arguments print what was wrong and the command's own usage line
 * on stderr and exit with status 2 (`turnchart help` prints everything); other failures print
 * the error on stderr and exit with status 1.
 */
import { NotATurnchartDatabaseError } from '../core/errors'
import { UsageError } from './args'
import { CliError, type CliIO } from './io'
import { packageVersion } from './version'

export const usage = `usage: turnchart <command> [options]

commands:
  demo [--inspect] [--inspect-port <n>] [--db <file or URL>]
                              run an agent session end to end (a scripted server, or
                              TURNCHART_BASE_URL + TURNCHART_MODEL [+ TURNCHART_API_KEY])
  chart [--json]              the turn chart as Mermaid, or as JSON for the Stately editor
  help, --help                this text
  --version                   turnchart's version

read-only (never migrate, recover or write; <db> is a SQLite file or a postgres:// URL):
  sessions <db> [--json]      list the sessions of a database
  show <db> <session> [--json]
                              a session's conversation: messages, parts, turns and states
  replay <db> <turn> [--json]  a turn's transition timeline, replayed through the chart
  schedules <db> [--session <id>] [--json]
                              the schedules (engine.schedule): next and last occurrence,
                              turns started, occurrences missed
  view <db> [--port <n>]      serve an offline viewer on 127.0.0.1: sessions, conversations,
                              each turn's path through the chart (live for running turns)
  rerun <db> <turn> [--json] [--system <text>] [--model <url> [--model-id <id>]]
        [--tools recorded|live [--tools-module <file>]] [--out <file>]
        [--after-divergence stop|live] [--tool-drift stop|continue] [--steps]
                              run a stored turn again in a scratch database (in memory, or
                              the new SQLite file --out) and print its parts beside the
                              original's, the first difference marked: by default against
                              its recorded responses and tool results (no provider call);
                              --model: an OpenAI-compatible endpoint instead (its key from
                              TURNCHART_API_KEY, its id from --model-id or TURNCHART_MODEL);
                              --system: another system prompt; --tools live: the tools of
                              --tools-module (exported as \`tools\`) run for real;
                              --after-divergence live: the recorded responses, then --model
                              from where the run leaves them; --tool-drift continue: past a
                              live tool result that differs (each reported); --steps: the
                              steps side by side (text, tool calls, results, usage)
  diff <db> <turnA> <turnB> [--json] [--ignore <fields>]
                              two stored turns' steps side by side, the first difference
                              marked (--ignore usage,states: fields not compared)
  eval <suite.json> [--out <dir>] [--concurrency <n>]
                              re-run a suite's stored turns and score them (tool calls,
                              text, JSON schema, your functions); exits 1 when a case
                              fails; --out: JSON, JUnit XML and an HTML report
  backup <db> <file>          copy a SQLite database into the new file <file> (SQLite's
                              online backup: safe while an app's engine writes to it;
                              for PostgreSQL it says how to use pg_dump)

writing (change the database):
  recover <db> [--json]       end as aborted the unfinished turns of processes that died
                              (the app's own createEngine resumes them instead)
  prune <db> --older-than <age> [--json]
                              delete the transition logs of turns ended before <age> ago
                              (30d, 12h, 90m); messages and parts stay

TURNCHART_DEBUG=1 prints stack traces.
`

type Command = (argv: string[], io: CliIO) => Promise<number>

// Each command's module is loaded when it runs: `turnchart show` need not load the AI SDK.
const commands: Record<string, () => Promise<Command>> = {
  demo: async () => (await import('./demo')).demoCommand,
  sessions: async () => (await import('./sessions')).sessionsCommand,
  schedules: async () => (await import('./schedules')).schedulesCommand,
  show: async () => (await import('./show')).showCommand,
  replay: async () => (await import('./replay')).replayCommand,
  rerun: async () => (await import('./rerun')).rerunCommand,
  diff: async () => (await import('./diff')).diffCommand,
  eval: async () => (await import('./eval')).evalCommand,
  chart: async () => (await import('./chart')).chartCommand,
  recover: async () => (await import('./write-commands')).recoverCommand,
  prune: async () => (await import('./write-commands')).pruneCommand,
  backup: async () => (await import('./backup')).backupCommand,
  view: async () => (await import('./view')).viewCommand,
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
  const load = name !== undefined && Object.hasOwn(commands, name) ? commands[name] : undefined
  try {
    if (!load) throw new UsageError(name === undefined ? 'missing command' : `unknown command ${name}`)
    return await (await load())(rest, io)
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`turnchart: ${error.message}\n${usageHint(load ? name : undefined)}`)
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

/**
 * What a usage error prints below its message: the command's own synopsis from `usage` (its
 * first line and the lines continuing it), or the list of commands; then where the rest is.
 *
 * @example
 * usageHint('show') // 'usage: turnchart show <db> <session> [--json]\n(turnchart help: every command and option)\n'
 */
export function usageHint(command: string | undefined): string {
  const lines = usage.split('\n')
  const first = command === undefined ? -1 : lines.findIndex((line) => line.startsWith(`  ${command} `) || line === `  ${command}`)
  const more = '(turnchart help: every command and option)\n'
  if (first === -1) return `commands: ${Object.keys(commands).join(', ')}\n${more}`
  // A synopsis continues on lines indented by 8 (the description column is at 30).
  let end = first + 1
  while (/^ {8}\S/.test(lines[end] ?? '')) end++
  const synopsis = lines.slice(first, end).map((line) => line.trim().split(/\s{2,}/)[0]).join(' ')
  return `usage: turnchart ${synopsis}\n${more}`
}

/** A closed pipe (`turnchart show … | head -2`): the reader has what it wanted; stop quietly. */
function exitOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error
    process.exit(process.exitCode ?? 0)
  })
}

/**
 * Runs the CLI as the `turnchart` command: on this process's arguments and streams, then exits
 * with the command's status. Called by the bin (bin/turnchart.js) and when this file is run.
 */
export function main(argv: string[] = process.argv.slice(2)): void {
  exitOnClosedPipe(process.stdout)
  runCli(argv, { stdout: process.stdout, stderr: process.stderr, env: process.env }).then((code) => {
    process.exitCode = code
    // Whatever still holds the event loop (an inspector's browser socket), do not hang.
    setTimeout(() => process.exit(code), 2000).unref()
  })
}

if (require.main === module) main()
