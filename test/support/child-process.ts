/**
 * A child process of the test (a real engine in another process, run from source with ts-node)
 * and the IPC messages it sends: every message is kept, and `waitFor` resolves with the first
 * one (past or future) a predicate accepts.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { forkNode, nodeEntry } from './compiled'

export type ChildMessage = { type: string; to?: string; turnId?: string; sessionId?: string; outcome?: string; error?: string; delta?: string; env?: string; text?: string; deadline?: number; kind?: string }

export interface TestChild {
  process: ChildProcess
  messages: ChildMessage[]
  waitFor(predicate: (m: ChildMessage) => boolean, timeoutMs?: number): Promise<ChildMessage>
  /** Settles with the exit code when the child exits. */
  exited: Promise<number | null>
}

/** `execPath`: the Node that runs it (default this one's; the Restate tests' service runs on Node 22). */
export function forkChild(script: string, args: string[], env: NodeJS.ProcessEnv = process.env, execPath?: string): TestChild {
  const entry = nodeEntry(script)
  const child = fork(entry.file, args, { execArgv: entry.execArgv, env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], ...(execPath ? { execPath } : {}) })
  const messages: ChildMessage[] = []
  const waiters: Array<{ predicate: (m: ChildMessage) => boolean; resolve: (m: ChildMessage) => void }> = []
  child.on('message', (message: ChildMessage) => {
    messages.push(message)
    for (const w of [...waiters]) {
      if (!w.predicate(message)) continue
      waiters.splice(waiters.indexOf(w), 1)
      w.resolve(message)
    }
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return {
    process: child,
    messages,
    exited,
    waitFor(predicate, timeoutMs = 20_000) {
      const found = messages.find(predicate)
      if (found) return Promise.resolve(found)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the child never sent the awaited message; got ${JSON.stringify(messages.slice(-5))}`)), timeoutMs)
        waiters.push({ predicate, resolve: (m) => (clearTimeout(timer), resolve(m)) })
      })
    },
  }
}

/**
 * Runs `script` (a real engine in a child process) until it SIGKILLs itself at `point`; rejects
 * when it exits otherwise, or never gets there within 30 s (it is then killed).
 */
export function runUntilKilled(script: string, args: string[], point: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = forkNode(script, args, { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`the child never reached '${point}'`))), 30_000)
    child.once('exit', (_code, signal) => {
      clearTimeout(timer)
      if (signal === 'SIGKILL') resolve()
      else reject(new Error(`the child exited without being killed at '${point}'`))
    })
  })
}
