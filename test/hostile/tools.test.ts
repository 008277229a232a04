/**
 * Hostile tools and models (issue 14): whatever a tool throws (a Proxy, a revoked Proxy, an
 * Error whose `message` getter throws, any non-Error value) becomes that tool's error part and
 * the turn goes on; a model calling a name from Object.prototype gets "unknown tool".
 */
import { jsonSchema, tool } from 'ai'
import { z } from 'zod'
import { createHarness, assistantParts, type Harness } from '../support/harness'
import { createEngine, type ToolPart } from '../../src'

let h: Harness
afterEach(async () => {
  await h?.close()
})

const hostileProxy = () =>
  new Proxy(
    {},
    {
      get() {
        throw new Error('get trap')
      },
      getPrototypeOf() {
        throw new Error('getPrototypeOf trap')
      },
      ownKeys() {
        throw new Error('ownKeys trap')
      },
      has() {
        throw new Error('has trap')
      },
      getOwnPropertyDescriptor() {
        throw new Error('descriptor trap')
      },
    },
  )

const revokedProxy = () => {
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  return proxy
}

const errorWithThrowingMessage = () => {
  const error = new Error('hidden')
  Object.defineProperty(error, 'message', {
    get() {
      throw new Error('message getter')
    },
  })
  return error
}

const cyclic = () => {
  const value: Record<string, unknown> = { a: 1 }
  value.self = value
  return value
}

const thrown: Array<[string, () => unknown, RegExp]> = [
  ['a Proxy whose traps throw', hostileProxy, /^tool threw a non-Error value: a value that cannot be (read|shown)/],
  ['a revoked Proxy', revokedProxy, /^tool threw a non-Error value: a value that cannot be (read|shown)/],
  ['an Error whose message getter throws', errorWithThrowingMessage, /a value that cannot be read|^Error$/],
  ['undefined', () => undefined, /^tool threw a non-Error value: undefined$/],
  ['null', () => null, /^tool threw a non-Error value: null$/],
  ['a number', () => 42, /^tool threw a non-Error value: 42$/],
  ['a symbol', () => Symbol('s'), /^tool threw a non-Error value: Symbol\(s\)$/],
  ['a BigInt', () => 10n, /^tool threw a non-Error value: 10n$/],
  ['a function', () => () => 1, /^tool threw a non-Error value: a function$/],
  ['a cyclic object', cyclic, /^tool threw a non-Error value: \[object Object\]$/],
  ['an Error without a message', () => new TypeError(''), /^TypeError$/],
]

test.each(thrown)('a tool that throws %s: an error part, and the turn goes on', async (_what, make, expected) => {
  const hostile = tool({
    description: 'throws',
    inputSchema: z.object({}),
    execute: async (): Promise<string> => {
      throw make()
    },
  })
  h = await createHarness({ tools: { hostile } })
  h.server.tool('hostile', {})
  h.server.text('moving on')
  const session = await h.engine.createSession()
  const done = await h.engine.prompt(session.id, 'x').done
  expect(done.outcome).toBe('completed')
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state.status).toBe('error')
  expect(call.state.status === 'error' && call.state.error).toMatch(expected)
  // The model was told, and answered.
  expect(h.server.calls).toBe(2)
  expect(h.server.requests[1].body.messages[2]).toMatchObject({ role: 'tool' })
})

test('a tool that returns a revoked Proxy: an error part, the turn goes on', async () => {
  const hostile = tool({ description: 'returns', inputSchema: z.object({}), execute: async () => revokedProxy() as unknown as string })
  h = await createHarness({ tools: { hostile } })
  h.server.tool('hostile', {})
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.state).toMatchObject({ status: 'error', error: expect.stringMatching(/revoked/) })
})

test.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'])('a model calling %s gets "unknown tool"', async (name) => {
  const echo = tool({ description: 'echo', inputSchema: z.object({ text: z.string() }), execute: async ({ text }) => text })
  h = await createHarness({ tools: { echo } })
  h.server.tool(name, {})
  h.server.text('ok')
  const session = await h.engine.createSession()
  expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
  const call = (await assistantParts(h.engine, session.id)).find((p): p is ToolPart => p.type === 'tool')!
  expect(call.tool).toBe(name)
  expect(call.state).toMatchObject({ status: 'error', error: `unknown tool '${name}'; available: echo` })
})

describe('jsonSchema() without a validator: the input is checked with ajv', () => {
  const run = (inputSchema: Parameters<typeof tool>[0]['inputSchema']) => {
    const seen: unknown[] = []
    const plain = tool({ description: 'plain', inputSchema, execute: async (input: unknown) => { seen.push(input); return 'ran' } } as never)
    return { plain, seen }
  }

  test('input that does not fit the schema is an error part and execute never runs', async () => {
    const { plain, seen } = run(jsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false }))
    h = await createHarness({ tools: { plain } })
    h.server.tools([
      { name: 'plain', input: { path: 5 } },
      { name: 'plain', input: {} },
      { name: 'plain', input: { path: 'a', extra: true } },
      { name: 'plain', input: { path: 'ok' } },
    ])
    h.server.text('done')
    const session = await h.engine.createSession()
    expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
    const calls = (await assistantParts(h.engine, session.id)).filter((p): p is ToolPart => p.type === 'tool')
    expect(calls.map((c) => (c.state.status === 'error' ? c.state.error : c.state.status))).toEqual([
      "invalid input for tool 'plain': /path must be string",
      "invalid input for tool 'plain': must have required property 'path'",
      "invalid input for tool 'plain': must NOT have additional properties",
      'completed',
    ])
    expect(seen).toEqual([{ path: 'ok' }])
  })

  test('a 2020-12 schema is read as 2020-12', async () => {
    const { plain, seen } = run(
      jsonSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', $defs: { positive: { type: 'integer', minimum: 1 } }, properties: { n: { $ref: '#/$defs/positive' } }, required: ['n'] }),
    )
    h = await createHarness({ tools: { plain } })
    h.server.tools([{ name: 'plain', input: { n: 0 } }, { name: 'plain', input: { n: 2 } }])
    h.server.text('done')
    const session = await h.engine.createSession()
    expect((await h.engine.prompt(session.id, 'x').done).outcome).toBe('completed')
    const calls = (await assistantParts(h.engine, session.id)).filter((p): p is ToolPart => p.type === 'tool')
    expect(calls[0].state).toMatchObject({ status: 'error', error: "invalid input for tool 'plain': /n must be >= 1" })
    expect(seen).toEqual([{ n: 2 }])
  })

  test('a schema ajv cannot compile fails createEngine, naming the tool', async () => {
    const { plain } = run(jsonSchema({ type: 'object', properties: { a: { type: 'no-such-type' } } } as never))
    await expect(createEngine({ model: { specificationVersion: 'v3', provider: 'test', modelId: 'test', doStream: async () => ({}) } as never, tools: { plain } })).rejects.toMatchObject({
      name: 'InvalidOptionError',
      option: 'tools.plain.inputSchema',
    })
  })
})
