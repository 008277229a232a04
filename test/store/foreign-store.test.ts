/**
 * A third party's store as the `database` option: any object implementing the Store contract
 * (docs/stores.md). Here a thin wrapper over the memory store (an object of its own, not a
 * `MemoryStore`) that records the calls it forwards: the engine runs a tool turn on it, writes
 * only through it, and leaves it open at close.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, InvalidOptionError, MemoryStore, type Store } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { modelFor } from '../support/harness'

/** Every aggregate method forwarded to `inner`, each call recorded as `turns.claim` and so on. */
function recordingStore(inner: Store, calls: string[]): Store {
  const forward = <T extends object>(name: string, target: T): T => {
    const methods = Object.getPrototypeOf(target) as object
    const out: Record<string, unknown> = {}
    for (const method of Object.getOwnPropertyNames(methods).filter((m) => m !== 'constructor')) {
      out[method] = (...args: unknown[]) => {
        calls.push(`${name}.${method}`)
        return (target as Record<string, (...a: unknown[]) => unknown>)[method](...args)
      }
    }
    return out as T
  }
  return {
    sessions: forward('sessions', inner.sessions),
    messages: forward('messages', inner.messages),
    turns: forward('turns', inner.turns),
    transitions: forward('transitions', inner.transitions),
    queue: forward('queue', inner.queue),
    controls: forward('controls', inner.controls),
    transaction: (fn) => {
      calls.push('transaction')
      return inner.transaction((tx) => fn(recordingStore(tx, calls)))
    },
  }
}

let server: ScriptedServer
beforeEach(async () => {
  server = await startScriptedServer()
})
afterEach(async () => {
  await server.close()
})

const add = tool({ description: 'Add', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => a + b })

test('an engine runs a tool turn on a foreign store (a wrapper over the memory store), through it only', async () => {
  const memory = new MemoryStore()
  const calls: string[] = []
  const store = recordingStore(memory, calls)
  expect(store).not.toBeInstanceOf(MemoryStore)
  const engine = await createEngine({ database: store, model: modelFor(server), tools: { add } })
  server.tool('add', { a: 2, b: 3 }, { id: 'call_add' })
  server.text('5')
  const session = await engine.createSession()
  const turn = engine.prompt(session.id, 'add 2 and 3')
  expect((await turn.done).outcome).toBe('completed')
  await engine.close()

  // What the engine wrote is in the memory store under the wrapper, read without any engine.
  const [, assistant] = await memory.messages.list(session.id)
  expect(assistant.parts.find((p) => p.type === 'tool')).toMatchObject({ tool: 'add', callId: 'call_add', state: { status: 'completed', output: 5 } })
  expect((await memory.transitions.list(turn.id)).map((t) => t.to)).toEqual(['step-gate', 'streaming', 'tool-running', 'streaming', 'completed'])
  expect(await memory.turns.get(turn.id)).toMatchObject({ outcome: 'completed', step: 2 })
  expect(calls).toEqual(expect.arrayContaining(['transaction', 'sessions.insert', 'turns.insert', 'transitions.append', 'messages.upsertParts']))

  // Closing the engine left the store open: a second engine goes on with the same session.
  const again = await createEngine({ database: store, model: modelFor(server) })
  server.text('still here')
  expect((await again.prompt(session.id, 'and now?').done).outcome).toBe('completed')
  expect(await memory.messages.list(session.id)).toHaveLength(4)
  await again.close()
})

test('a foreign store missing a method of the contract is refused at createEngine, naming the method', async () => {
  const store = recordingStore(new MemoryStore(), [])
  const { claim: _claim, ...turns } = store.turns
  const incomplete = { ...store, turns } as unknown as Store
  const error = await createEngine({ database: incomplete, model: modelFor(server) }).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(InvalidOptionError.isInstance(error)).toBe(true)
  expect((error as InvalidOptionError).option).toBe('database')
  expect((error as Error).message).toContain('turns.claim')
})
