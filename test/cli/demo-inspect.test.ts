/**
 * `turnchart demo --inspect`: prints the inspector URL and sends the turns' inspection events
 * to the inspector server, where a WebSocket client (standing in for the browser page) gets them.
 */
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { runCli } from './run-cli'

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

test('demo --inspect prints the URL and the turns reach a WebSocket client of the inspector server', async () => {
  const port = await freePort()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-inspect-'))
  const received: Array<{ type: string; snapshot?: { value?: unknown } }> = []
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
  try {
    const run = await runCli(['demo', '--inspect', '--inspect-port', String(port), '--db', path.join(dir, 'demo.db')])
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(`Stately inspector: open http://localhost:${port}`)
    expect(run.stdout.match(/^turn trn_\S+: (\w+)/gm)?.map((l) => l.split(': ')[1])).toEqual(['completed', 'completed', 'aborted'])
    expect(socket).toBeDefined()
    const snapshots = received.filter((e) => e.type === '@xstate.snapshot').map((e) => e.snapshot?.value)
    expect(snapshots).toEqual(expect.arrayContaining([{ running: { step: 'streaming' } }, 'completed', 'aborted']))
    expect(received.some((e) => e.type === '@xstate.actor')).toBe(true)
    expect(received.some((e) => e.type === '@xstate.event')).toBe(true)
  } finally {
    stopped = true
    socket?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}, 60_000)

test('demo --inspect-port must be a port number (usage, exit 2)', async () => {
  const run = await runCli(['demo', '--inspect', '--inspect-port', 'x'])
  expect(run.code).toBe(2)
  expect(run.stderr).toContain('--inspect-port must be a port number')
})
