/**
 * The provider prompt with a cache (a running turn's steps send the same history objects): the
 * same prompt as without it, each message converted once, and consecutive tool messages merged
 * without changing what the cache holds.
 */
import type { ModelMessage } from 'ai'
import { toProviderPrompt, type ProviderPromptCache } from '../../src/llm/provider-prompt'

const call = (id: string): ModelMessage => ({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'fetch', input: { id } }] })
const result = (id: string): ModelMessage => ({ role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'fetch', output: { type: 'text', value: `doc ${id}` } }] })

test('a cached conversion equals the uncached one, and reuses each converted message', () => {
  const cache: ProviderPromptCache = new WeakMap()
  const history: ModelMessage[] = [{ role: 'user', content: 'fetch a and b' }, call('a'), result('a'), result('b')]
  const first = toProviderPrompt('Be brief.', history, 'v3', cache)
  expect(first).toEqual(toProviderPrompt('Be brief.', history, 'v3'))
  // The two tool messages are merged into one: a new message, the cached ones unchanged.
  expect(first.filter((m) => m.role === 'tool')).toHaveLength(1)
  expect(cache.get(history[2])!.message.content).toHaveLength(1)

  const next = [...history, { role: 'assistant', content: 'done' } as ModelMessage]
  const second = toProviderPrompt('Be brief.', next, 'v3', cache)
  expect(second).toEqual(toProviderPrompt('Be brief.', next, 'v3'))
  expect(second[1]).toBe(first[1]) // the user message: converted once
  expect(second[2]).toBe(first[2])
  // A V4 model gets its own conversion.
  expect(toProviderPrompt(undefined, next, 'v4', cache)).toEqual(toProviderPrompt(undefined, next, 'v4'))
})
