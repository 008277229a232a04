/** The circuit breaker's rule over a model's row: counted, opened, half-opened, probed, closed. */
import { admit, afterAnswer, afterFailure, circuitState, heldTo, probeReleased, type CircuitBreakerOptions } from '../../src/llm/circuit-rule'
import type { CircuitRecord } from '../../src/store/store'

const options: CircuitBreakerOptions = { failureThreshold: 3, windowMs: 10_000, openMs: 5_000 }

/** The row after failures at the given times, from none. */
function failures(...times: number[]): CircuitRecord | undefined {
  let record: CircuitRecord | undefined
  for (const now of times) record = afterFailure(record, 'primary', now, options) ?? record
  return record
}

test('failures within the window open the circuit at the threshold, for openMs', () => {
  expect(circuitState(failures(0, 1), 2)).toBe('closed')
  const opened = failures(0, 1, 2)!
  expect(opened).toMatchObject({ failures: 3, openUntil: 5_002, probeUntil: null, version: 3 })
  expect(circuitState(opened, 5_001)).toBe('open')
  expect(admit(opened, 3_000, options)).toEqual({ send: false, until: 5_002 })
})

test("a window that passed counts from the next failure again; an open circuit's failures change nothing", () => {
  expect(failures(0, 1, 10_001)).toMatchObject({ failures: 1, since: 10_001, openUntil: null })
  const opened = failures(0, 1, 2)!
  expect(afterFailure(opened, 'primary', 3_000, options)).toBeUndefined()
})

test('half-open: the first request takes the probe, the others wait on it; its answer closes the circuit, its failure opens it again', () => {
  const opened = failures(0, 1, 2)!
  const first = admit(opened, 6_000, options)
  expect(first).toEqual({ send: true, probe: { ...opened, probeUntil: 11_000, version: 4 } })
  const probing = (first as { probe: CircuitRecord }).probe
  expect(circuitState(probing, 6_000)).toBe('half-open')
  // (the others look again within two seconds, or when the probe's bound passes)
  expect(admit(probing, 6_500, options)).toEqual({ send: false, until: 8_500 })
  expect(afterAnswer(probing, 7_000)).toMatchObject({ failures: 0, openUntil: null, probeUntil: null, version: 5 })
  expect(afterFailure(probing, 'primary', 7_000, options)).toMatchObject({ failures: 4, openUntil: 12_000, probeUntil: null, version: 5 })
  // a probe stopped without an answer lets the next request probe
  expect(admit(probeReleased(probing, 7_000), 7_000, options)).toMatchObject({ send: true, probe: { probeUntil: 12_000 } })
  // a probe whose engine is gone is given up after openMs
  expect(admit(probing, 11_001, options)).toMatchObject({ send: true, probe: { probeUntil: 16_001 } })
})

test('an answer on a closed circuit writes nothing', () => {
  expect(afterAnswer(undefined, 0)).toBeUndefined()
  expect(afterAnswer(failures(0, 1), 2)).toBeUndefined()
  expect(admit(failures(0, 1), 2, options)).toEqual({ send: true })
})

test("a provider's retry-after holds the model until then, apart from the circuit; a shorter hold changes nothing", () => {
  const held = heldTo(undefined, 'primary', 3_000, 1_000)!
  expect(held).toMatchObject({ failures: 0, openUntil: null, heldUntil: 3_000, version: 1 })
  expect(circuitState(held, 1_000)).toBe('closed')
  expect(admit(held, 1_000, options)).toEqual({ send: false, until: 3_000, held: true })
  expect(admit(held, 3_000, options)).toEqual({ send: true })
  expect(heldTo(held, 'primary', 2_000, 1_500)).toBeUndefined()
  // an open circuit says when it half-opens, the hold notwithstanding
  const opened = { ...failures(0, 1, 2)!, heldUntil: 9_000 }
  expect(admit(opened, 3_000, options)).toEqual({ send: false, until: 5_002 })
})
