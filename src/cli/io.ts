/**
 * What every command shares: where it writes, colours (only on a terminal, never with
 * NO_COLOR), opening an existing database read-only, and one-line renderings of parts and transitions.
 */
import { readableEvent } from '../chart/readable-event'
import { InvalidArgumentError, InvalidOptionError } from '../core/errors'
import { openReadOnlyStore, readOnlyLocation, type ReadOnlyStore } from '../store/backends/read-only-store'
import type { Part, TransitionRecord } from '../core/types'

export interface CliIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream
  env: NodeJS.ProcessEnv
}

/** A command failed for a reason other than its arguments (exit status 1). */
export class CliError extends Error {
  override readonly name = 'CliError'
}

export interface Colors {
  dim(text: string): string
  bold(text: string): string
  cyan(text: string): string
  green(text: string): string
  yellow(text: string): string
  red(text: string): string
  magenta(text: string): string
}

export function colors(io: CliIO): Colors {
  const on = Boolean(io.stdout.isTTY) && !io.env.NO_COLOR && io.env.TERM !== 'dumb'
  const wrap = (code: number) => (text: string) => (on ? `\x1b[${code}m${text}\x1b[0m` : text)
  return { dim: wrap(2), bold: wrap(1), cyan: wrap(36), green: wrap(32), yellow: wrap(33), red: wrap(31), magenta: wrap(35) }
}

/**
 * An engine's error about its `database` option or argument, said as the CLI's user typed it
 * (`invalid <db>: …`, `invalid --out: …`), not as an API option the user never wrote.
 *
 * @example
 * asFlagError(new InvalidOptionError('database', '/tmp', 'a SQLite file path'), '<db>')
 * // CliError('invalid <db>: expected a SQLite file path, got "/tmp"')
 */
export function asFlagError(error: unknown, flag: string): unknown {
  const aboutDatabase =
    (InvalidOptionError.isInstance(error) && error.option === 'database') || (InvalidArgumentError.isInstance(error) && error.argument === 'database')
  if (!aboutDatabase) return error
  return new CliError(`invalid ${flag}: ${(error as Error).message.replace(/^invalid (option|argument) database: /, '')}`)
}

/**
 * Opens an existing turnchart database for reading only: no migration, no recovery, no write
 * (see `openReadOnlyStore`). A missing file is an error, never a new empty database; a
 * database without turnchart's tables is refused with `NotATurnchartDatabaseError`.
 */
export async function openForReading(database: string): Promise<ReadOnlyStore> {
  // Its backend says where a database can be (a file that exists, a server's URL) and how to show it.
  if (!readOnlyLocation(database)?.exists) throw new CliError(`no such database: ${database}`)
  return openReadOnlyStore(database).catch((error: unknown) => {
    throw asFlagError(error, '<db>')
  })
}


/**
 * Stored text made safe to print on a terminal: control characters (ESC and the rest of C0 and
 * C1, but newline and tab) are shown as `\u001b`-style escapes. Model text and tool output are
 * steerable by whoever talks to the model; printed raw, an escape sequence could clear the
 * screen, hide lines, retitle the window or write the clipboard (OSC 52) of whoever runs `show`.
 *
 * @example
 * printable('hi \x1b[2J') // 'hi \\u001b[2J'
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

export function truncate(text: string, max = 120): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

export function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** `streaming → tool-running  step.finished`, `retry-waiting → streaming  retry timer`: the event by its readable name. */
export function formatTransition(t: Pick<TransitionRecord, 'from' | 'to' | 'event'>, c: Colors): string {
  return `${c.cyan(`${t.from} → ${t.to}`)}  ${c.dim(readableEvent(t.event))}`
}

/** One or more lines for a stored part (used by `show`). */
export function formatPart(part: Part, c: Colors): string {
  const tag = part.step ? c.dim(` (step ${part.step}, attempt ${part.attempt ?? 1})`) : ''
  switch (part.type) {
    case 'text':
      return `${printable(part.text)}${part.time.end === undefined ? c.yellow(' [open]') : ''}`
    case 'reasoning':
      return c.dim(`thinking: ${printable(part.text)}`) + tag
    case 'tool': {
      const state = part.state
      const head = `tool ${c.bold(printable(part.tool))}(${truncate(json(state.input), 80)}) ${state.status}`
      if (state.status === 'completed') return `${head} → ${truncate(json(state.output))}${tag}`
      if (state.status === 'error') return `${head}: ${c.red(printable(state.error))}${tag}`
      if (state.status === 'in-doubt') return `${head}: ${c.yellow(`outcome unknown (${printable(state.reason)}); engine.resolveCall settles it`)}${tag}`
      if (state.status === 'deferred') return `${head}: ${c.yellow(`waiting for its result${state.deadline !== undefined ? ` until ${new Date(state.deadline).toISOString()}` : ''}`)}${tag}`
      return head + tag
    }
    case 'step-start':
      return c.dim(`step ${part.step} start (attempt ${part.attempt ?? 1}${part.model ? `, model ${printable(part.model)}` : ''})`)
    case 'step-finish':
      return c.dim(`step ${part.step} finish: ${part.reason}, tokens in ${part.tokens.input} out ${part.tokens.output}${part.tokens.reasoning ? ` reasoning ${part.tokens.reasoning}` : ''}`)
    case 'compaction':
      return c.magenta(`compaction (${part.auto ? 'automatic' : 'manual'})`)
    case 'file': {
      // never the bytes: their size
      const what = part.url ?? `${Math.floor(((part.data ?? '').length * 3) / 4)} bytes`
      return c.dim(printable(`${part.image ? 'image' : 'file'}${part.filename ? ` ${part.filename}` : ''} ${part.mediaType ?? ''} ${what}`))
    }
    default:
      return json(part)
  }
}
