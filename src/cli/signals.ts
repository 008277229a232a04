/**
 * SIGINT/SIGTERM for commands that hold an engine: the first signal closes the engine (its
 * turns stay resumable: a running turn is aborted cleanly and released, one waiting for
 * approval stays waiting) and exits with 128 + the signal number; a second one exits at once.
 * `close` is told which signal came: SIGTERM is a deploy's stop (the commands hand their turns
 * over, `close({ handoff: true })`), SIGINT a person's Ctrl-C (they stop where they are).
 */
import os from 'node:os'

export interface SignalGuard {
  /** Removes the handlers (the command ended on its own). */
  dispose(): void
}

/**
 * @example
 * const guard = onTerminationSignals((signal) => engine.close(closeOnSignal(signal)), (line) => process.stderr.write(line))
 * try { ... } finally { guard.dispose() }
 */
export function onTerminationSignals(close: (signal: NodeJS.Signals) => Promise<unknown>, say: (line: string) => void): SignalGuard {
  let closing = false
  const handler = (signal: NodeJS.Signals) => {
    const code = 128 + (os.constants.signals[signal] ?? 1)
    if (closing) process.exit(code)
    closing = true
    say(`turnchart: ${signal}: closing the engine (${signal === 'SIGTERM' ? 'running turns handed over at their next step gate' : 'running turns stay resumable'})\n`)
    close(signal)
      .catch((error) => say(`turnchart: closing failed: ${error instanceof Error ? error.message : String(error)}\n`))
      .finally(() => process.exit(code))
  }
  process.on('SIGINT', handler)
  process.on('SIGTERM', handler)
  return {
    dispose() {
      process.off('SIGINT', handler)
      process.off('SIGTERM', handler)
    },
  }
}

/**
 * How a command's engine closes on `signal`: SIGTERM (a deploy, a supervisor) hands the turns
 * to the other engines on the database; SIGINT stops them where they are.
 *
 * @example
 * closeOnSignal('SIGTERM') // { handoff: true }
 */
export function closeOnSignal(signal: NodeJS.Signals): { handoff?: boolean } {
  return signal === 'SIGTERM' ? { handoff: true } : {}
}

/**
 * Resolves at the first SIGINT or SIGTERM (a server command serves until then).
 *
 * @example
 * await waitForSignal() // a server keeps serving until Ctrl-C
 */
export function waitForSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      resolve()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
}
