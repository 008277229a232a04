import { isUsageOverflow, stepTokenCount, usableContext, type ModelLimits } from '../../src/policy/overflow'
import type { Tokens } from '../../src/core/types'

function tokens(input: number, output: number, cacheRead = 0, reasoning = 0): Tokens {
  return { input, output, reasoning, cache: { read: cacheRead, write: 0 } }
}

describe('usableContext', () => {
  const cases: Array<[string, ModelLimits, number | undefined, number]> = [
    ['Claude: 200k context, 64k output → reserve 20k', { context: 200_000, output: 64_000 }, undefined, 180_000],
    ['GPT-4o: 128k context, 16k output → reserve 16k', { context: 128_000, output: 16_384 }, undefined, 111_616],
    ['small local model: 8k context, 4k output', { context: 8_192, output: 4_096 }, undefined, 4_096],
    ['explicit reserve', { context: 128_000, output: 16_384 }, 1_000, 127_000],
    ['explicit reserve of 0', { context: 128_000, output: 16_384 }, 0, 128_000],
    ['reserve larger than the context floors at 0', { context: 16_000, output: 32_000 }, undefined, 0],
    ['unknown output limit → no reserve', { context: 32_000, output: 0 }, undefined, 32_000],
    ['unknown context → 0', { context: 0, output: 4_096 }, undefined, 0],
  ]

  it.each(cases)('%s', (_name, limits, reserved, expected) => {
    expect(usableContext(limits, reserved)).toBe(expected)
  })
})

describe('stepTokenCount', () => {
  it('is input + output; cache reads and reasoning are already inside them', () => {
    expect(stepTokenCount(tokens(1000, 200, 800, 50))).toBe(1200)
  })

  it('treats missing numbers as 0', () => {
    expect(stepTokenCount({ input: Number.NaN, output: 5, reasoning: 0, cache: { read: 0, write: 0 } })).toBe(5)
  })
})

describe('isUsageOverflow', () => {
  const claude = { context: 200_000, output: 64_000 }
  const cases: Array<[string, Tokens, ModelLimits, number | undefined, boolean]> = [
    ['well below the usable context', tokens(50_000, 1_000), claude, undefined, false],
    ['one token below usable', tokens(179_000, 999), claude, undefined, false],
    ['exactly usable (≥)', tokens(179_000, 1_000), claude, undefined, true],
    ['above usable', tokens(181_000, 500), claude, undefined, true],
    ['output counts', tokens(170_000, 10_000), claude, undefined, true],
    ['cache reads are not counted twice', tokens(150_000, 1_000, 150_000), claude, undefined, false],
    ['explicit reserve', tokens(195_000, 0), claude, 1_000, false],
    ['explicit reserve reached', tokens(199_000, 0), claude, 1_000, true],
    ['unknown context limit (0) → no detection', tokens(10_000_000, 0), { context: 0, output: 0 }, undefined, false],
    [
      'unknown context limit (undefined) → no detection',
      tokens(10_000_000, 0),
      { context: undefined as unknown as number, output: 4096 },
      undefined,
      false,
    ],
    ['no usage reported → no detection', tokens(0, 0), { context: 16_000, output: 32_000 }, undefined, false],
    ['reserve eats the whole context → any usage overflows', tokens(10, 0), { context: 16_000, output: 32_000 }, undefined, true],
  ]

  it.each(cases)('%s', (_name, used, limits, reserved, expected) => {
    expect(isUsageOverflow(used, limits, reserved)).toBe(expected)
  })
})
