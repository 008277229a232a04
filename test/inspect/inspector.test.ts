/**
 * The Stately inspector on a live turn, on loopback: the engine's `inspect` option gets a
 * `createWebSocketInspector`, `createInspectorServer` relays its messages, and a WebSocket
 * client (standing in for the browser bridge page) receives the turn actor's `@xstate.actor`,
 * `@xstate.event` and `@xstate.snapshot` events.
 *
 * @statelyai/inspect is ESM only: jest.config.js transforms it (see docs/inspector.md).
 */
import net from 'node:net'
import { createWebSocketInspector } from '@statelyai/inspect'
import { createHarness, type Harness } from '../support/harness'

// tsconfig's `moduleResolution: node` does not read `exports` subpaths; jest's resolver does.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { createInspectorServer } = require('@statelyai/inspect/server') as typeof import('@statelyai/inspect/dist/server.mjs')

// `ws` comes with @statelyai/inspect (its WebSocket implementation in Node); Node 20 has no
// WebSocket client without a flag.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const WebSocket = require('ws') as new (url: string) => {
  on(event: 'open' | 'message' | 'error' | 'close', listener: (data?: unknown) => void): void
  close(): void
}

interface Received {
  type: string
  rootId?: string
  event?: { type: string }
  snapshot?: { value?: unknown; status?: string }
  definition?: string
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

function until(check: () => boolean, what: () => string, timeoutMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const poll = setInterval(() => {
      if (check()) {
        clearInterval(poll)
        resolve()
      } else if (Date.now() - started > timeoutMs) {
        clearInterval(poll)
        reject(new Error(`timed out waiting for ${what()}`))
      }
    }, 20)
  })
}

let h: Harness | undefined
const cleanups: Array<() => void> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup()
  await h?.close()
  h = undefined
})

test("a turn's @xstate.actor, @xstate.event and @xstate.snapshot events reach a WebSocket receiver", async () => {
  const port = await freePort()
  const relay = createInspectorServer({ port, autoOpen: false })
  cleanups.push(() => relay.stop())

  const received: Received[] = []
  const receiver = await new Promise<InstanceType<typeof WebSocket>>((resolve, reject) => {
    const attempt = (left: number) => {
      const socket = new WebSocket(`ws://127.0.0.1:${port}`)
      socket.on('open', () => resolve(socket))
      socket.on('error', () => (left > 0 ? setTimeout(() => attempt(left - 1), 50) : reject(new Error('receiver could not connect'))))
    }
    attempt(20)
  })
  receiver.on('message', (data) => received.push(JSON.parse(String(data))))
  cleanups.push(() => receiver.close())

  const inspector = createWebSocketInspector({ url: `ws://127.0.0.1:${port}` })
  cleanups.push(() => inspector.stop())

  h = await createHarness({ inspect: inspector.inspect })
  h.server.reasoning('thinking', 'hello inspector')
  const session = await h.engine.createSession()
  const turn = h.engine.prompt(session.id, 'hi')
  expect((await turn.done).outcome).toBe('completed')

  const turnRoot = () => received.find((e) => e.type === '@xstate.actor' && e.definition?.includes('"id":"turn"'))?.rootId
  const ofTurn = (type: string) => received.filter((e) => e.type === type && e.rootId !== undefined && e.rootId === turnRoot())
  await until(
    () => ofTurn('@xstate.snapshot').some((e) => e.snapshot?.value === 'completed'),
    () => `a completed snapshot; received ${received.map((e) => `${e.type}:${e.event?.type ?? ''}`).join(', ')}`,
  )
  expect(turnRoot()).toBeDefined()
  expect(ofTurn('@xstate.actor').length).toBeGreaterThanOrEqual(1)
  const events = ofTurn('@xstate.event').map((e) => e.event?.type)
  expect(events).toEqual(expect.arrayContaining(['turn.start', 'step.finished']))
  // the inspector sees the chart's nested values (`streaming` is inside `running.step`)
  const states = ofTurn('@xstate.snapshot').map((e) => JSON.stringify(e.snapshot?.value))
  const streaming = JSON.stringify({ running: { step: 'streaming' } })
  expect(states).toEqual(expect.arrayContaining([streaming, '"completed"']))
  expect(states.indexOf(streaming)).toBeLessThan(states.indexOf('"completed"'))
})
