/**
 * A tiny argument parser for the CLI: positionals, boolean flags and `--name value` options.
 * Anything unexpected is a `UsageError` (usage on stderr, exit status 2).
 */

export class UsageError extends Error {
  override readonly name = 'UsageError'
}

export interface ParsedArgs {
  positionals: string[]
  flags: Set<string>
  values: Map<string, string>
}

/**
 * @example
 * parseArgs(['a.db', '--json'], { flags: ['json'], positionals: ['db'] }) // { positionals: ['a.db'], flags: {'json'} }
 * parseArgs([], { positionals: ['db'] }) // throws UsageError('missing argument <db>')
 */
export function parseArgs(argv: string[], spec: { flags?: string[]; values?: string[]; positionals: number | string[] }): ParsedArgs {
  // Named positionals (`['db', 'session']`) let a missing one be named in the message.
  const names = typeof spec.positionals === 'number' ? [] : spec.positionals
  const count = typeof spec.positionals === 'number' ? spec.positionals : spec.positionals.length
  const parsed: ParsedArgs = { positionals: [], flags: new Set(), values: new Map() }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg.startsWith('--')) {
      const [name, inline] = arg.slice(2).split(/=(.*)/s, 2)
      if (spec.flags?.includes(name) && inline === undefined) parsed.flags.add(name)
      else if (spec.values?.includes(name)) {
        const value = inline ?? argv[++i]
        if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`)
        parsed.values.set(name, value)
      } else throw new UsageError(`unknown option ${arg}`)
    } else if (arg.startsWith('-') && arg !== '-') {
      throw new UsageError(`unknown option ${arg}`)
    } else parsed.positionals.push(arg)
  }
  if (parsed.positionals.length < count) {
    const name = names[parsed.positionals.length]
    throw new UsageError(name ? `missing argument <${name}>` : 'missing argument')
  }
  if (parsed.positionals.length > count) throw new UsageError(`unexpected argument ${parsed.positionals[count]}`)
  return parsed
}
