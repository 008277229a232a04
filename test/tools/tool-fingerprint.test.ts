/**
 * A tool set's fingerprint: names and input schema digests (hex SHA-256 of canonical JSON), the
 * same for the same schema written in another key order, and the changes a new tool set makes.
 */
import { jsonSchema, tool } from 'ai'
import { createHash } from 'node:crypto'
import { z } from 'zod'
import { fingerprintChanges, parseFingerprint, serializeFingerprint, toolFingerprint } from '../../src/tools/tool-fingerprint'

const execute = async () => 'ok'

test('a digest is the hex SHA-256 of the schema as canonical JSON; key order does not matter', async () => {
  const a = await toolFingerprint({ read: tool({ inputSchema: jsonSchema({ type: 'object', properties: { path: { type: 'string' } } }), execute }) })
  const b = await toolFingerprint({ read: tool({ inputSchema: jsonSchema({ properties: { path: { type: 'string' } }, type: 'object' }), execute }) })
  expect(a).toEqual(b)
  const canonical = '{"properties":{"path":{"type":"string"}},"type":"object"}'
  expect(a.read).toBe(createHash('sha256').update(canonical).digest('hex'))
})

test('zod and provider tools have digests; a changed schema changes the digest', async () => {
  const one = await toolFingerprint({ a: tool({ inputSchema: z.object({ city: z.string() }), execute }), web: { type: 'provider', id: 'openai.web_search', args: {} } as never })
  const two = await toolFingerprint({ a: tool({ inputSchema: z.object({ city: z.string(), days: z.number() }), execute }), web: { type: 'provider', id: 'openai.web_search', args: {} } as never })
  expect(Object.keys(one)).toEqual(['a', 'web'])
  expect(one.a).toMatch(/^[0-9a-f]{64}$/)
  expect(one.web).toBe(two.web)
  expect(one.a).not.toBe(two.a)
})

test('changes: a removed tool and a changed schema; an added tool breaks nothing', () => {
  expect(fingerprintChanges({ a: '1', b: '2', c: '3' }, { a: '1', c: '4', d: '5' })).toEqual([
    { tool: 'b', change: 'removed' },
    { tool: 'c', change: 'schema-changed' },
  ])
})

test('stored as canonical JSON and read back; an old or unreadable value is null', () => {
  expect(serializeFingerprint({ b: '2', a: '1' })).toBe('{"a":"1","b":"2"}')
  expect(parseFingerprint('{"a":"1","b":"2"}')).toEqual({ a: '1', b: '2' })
  expect(parseFingerprint(null)).toBeNull()
  expect(parseFingerprint('not json')).toBeNull()
})
