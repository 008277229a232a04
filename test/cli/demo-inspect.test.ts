/**
 * `turnchart demo --inspect`: prints the inspector URL and sends the turns' inspection events
 * to the inspector server, where a WebSocket client (standing in for the browser page) gets them.
 */
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { cliArgs } from '../support/compiled'
import { spawn } from 'node:child_process'
import { root, runCli } from './run-cli'

// eslint-disable-next-line @typescript-eslint/no-require-imports
const WebSocket = require('ws') as new (url: string) => {
  on(event: 'open' | 'message' | 'error' | 'close', listener: (data?: unknown) => void): void
  close(): void
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

/** The first IPv4 address of this machine that is not loopback, if any. */
function externalAddress(): string | undefined {
  return Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address
}

function refuses(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port })
    socket.once('connect', () => (socket.destroy(), resolve(false)))
    socket.once('error', () => resolve(true))
  })
}

test('demo --inspect serves on 127.0.0.1 only, relays the turns to a WebSocket client, says what is online, and waits for Ctrl-C', async () => {
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-inspect-'))
  const received: Array<{ type: string; name?: string; sessionId?: string; parentId?: string; rootId?: string; snapshot?: { value?: unknown } }> = []
  let socket: InstanceType<typeof WebSocket> | undefined
  let stopped = false
  const connect = () => {
    if (stopped) return
    const ws = new WebSocket(`ws://127.0.0.1:${port}`)
    ws.on('open', () => (socket = ws))
    ws.on('message', (data) => received.push(JSON.parse(String(data))))
    ws.on('error', () => setTimeout(connect, 50))
  }
  connect()
  const child = spawn(process.execPath, [...cliArgs(), 'demo', '--inspect', '--inspect-port', String(port), '--db', path.join(dir, 'demo.db')], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1', TURNCHART_BASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        stdout += chunk
        if (stdout.includes('Ctrl-C stops it')) resolve()
      })
      child.on('exit', () => reject(new Error(`the demo exited without waiting\n${stdout}\n${stderr}`)))
    })
    expect(stdout).toContain(`Stately inspector: open http://127.0.0.1:${port} in a browser (127.0.0.1 only)`)
    expect(stdout).toContain("online: that page embeds Stately's inspector UI from https://stately.ai/inspect")
    expect(stdout.match(/^turn trn_\S+: (\w+)/gm)?.map((l) => l.split(': ')[1])).toEqual(['completed', 'completed', 'completed', 'aborted'])
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text()
    expect(page).toContain(`new WebSocket('ws://127.0.0.1:${port}')`)
    const external = externalAddress()
    if (external) expect(await refuses(external, port)).toBe(true)
    expect(socket).toBeDefined()
    const snapshots = received.filter((e) => e.type === '@xstate.snapshot').map((e) => e.snapshot?.value)
    expect(snapshots).toEqual(expect.arrayContaining([{ running: { step: 'streaming' } }, 'completed', 'aborted']))
    expect(received.some((e) => e.type === '@xstate.actor')).toBe(true)
    expect(received.some((e) => e.type === '@xstate.event')).toBe(true)
    // Run trees: the researcher's child turn is shown under the actor of the turn that called it.
    const turnActors = received.filter((e) => e.type === '@xstate.actor' && e.name === 'turn')
    const roots = turnActors.filter((e) => e.parentId === undefined)
    const children = turnActors.filter((e) => e.parentId !== undefined)
    expect(roots).toHaveLength(4)
    expect(children).toHaveLength(1)
    const parent = roots.find((r) => r.sessionId === children[0].parentId)
    expect(parent).toBeDefined()
    expect(children[0].rootId).toBe(parent!.rootId)
    // …and its events under the tree's root as well.
    expect(received.filter((e) => e.type === '@xstate.snapshot' && e.sessionId === children[0].sessionId).every((e) => e.rootId === parent!.rootId)).toBe(true)
    child.kill('SIGINT')
    expect(await exited).toBe(0)
    expect(stderr).toBe('')
  } finally {
    stopped = true
    socket?.close()
    if (child.exitCode === null) child.kill('SIGKILL')
    fs.rmSync(dir, { recursive: true, force: true })
  }
}, 60_000)

test('demo --inspect-port must be a port number (usage, exit 2)', async () => {
  const run = await runCli(['demo', '--inspect', '--inspect-port', 'x'])
  expect(run.code).toBe(2)
  expect(run.stderr).toContain('--inspect-port must be a port number')
})
