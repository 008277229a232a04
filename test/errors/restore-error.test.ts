/**
 * Stored error records become error instances again (what `turn.done` resolves with).
 */
import { APIError, MessageAbortedError, ReplayMismatchError, RetriesExhaustedError, StorageError, TurnchartError, UnknownError } from '../../src'
import { errorFromRecord } from '../../src/core/errors/restore'

const samples = [
  new MessageAbortedError(),
  new StorageError('recording the transition to completed', new Error('disk full')),
  new APIError({ message: 'overloaded', statusCode: 529, isRetryable: true, responseBody: '{"type":"overloaded_error"}' }),
  new RetriesExhaustedError({ reason: 'max-attempts', attempts: 3, lastError: { name: 'APIError', message: 'overloaded' } }),
  new ReplayMismatchError({ turnId: 'trn_1', seq: 4, expected: 'streaming', logged: 'failed', detail: 'edited' }),
]

test.each(samples.map((error) => [error.name, error] as const))('%s: isInstance, instanceof, name, message and fields survive the record', (_name, original) => {
  const restored = errorFromRecord(original.toJSON())
  const Class = original.constructor as typeof MessageAbortedError
  expect(Class.isInstance(restored)).toBe(true)
  expect(restored).toBeInstanceOf(Class)
  expect(restored).toBeInstanceOf(Error)
  expect(TurnchartError.isTurnchartError(restored)).toBe(true)
  expect(restored.name).toBe(original.name)
  expect(restored.message).toBe(original.message)
  expect(restored.toJSON()).toEqual(original.toJSON())
})

test('an unknown name becomes an UnknownError that keeps the original name and fields', () => {
  const restored = errorFromRecord({ name: 'ModelError', message: 'model broke', code: 7 })
  expect(UnknownError.isInstance(restored)).toBe(true)
  expect(restored).toBeInstanceOf(UnknownError)
  expect(restored).toMatchObject({ name: 'UnknownError', originalName: 'ModelError', message: 'model broke', code: 7 })
})
