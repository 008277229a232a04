/**
 * Stored error records (`{ name, message, ...fields }`) back into error instances, so that what
 * `turn.done` resolves with answers `isInstance` and `instanceof` like a thrown error.
 */
import * as errors from './index'

type ErrorClass = abstract new (...args: never[]) => errors.TurnchartError

const classes = new Map<string, ErrorClass>()
for (const value of Object.values(errors)) {
  if (typeof value === 'function' && value.prototype instanceof errors.TurnchartError) {
    // The name is an instance field: read it from the prototype chain's constructor name.
    classes.set(value.name, value as unknown as ErrorClass)
  }
}

/**
 * The error instance of a stored record: its class when turnchart has one of that name (an
 * `UnknownError` otherwise, keeping the record's fields), with every field of the record.
 *
 * @example
 * const error = errorFromRecord({ name: 'MessageAbortedError', message: 'The turn was aborted' })
 * MessageAbortedError.isInstance(error) // true
 * error instanceof MessageAbortedError // true
 */
export function errorFromRecord(record: errors.SerializedError): errors.TurnchartError & errors.SerializedError {
  const known = classes.get(record.name)
  const instance = Reflect.construct(Error, [record.message], known ?? errors.UnknownError) as errors.TurnchartError & errors.SerializedError
  // Class fields (the marker, `name`) are set by constructors this path does not run.
  Object.defineProperty(instance, Symbol.for('turnchart.error'), { value: true })
  const { message: _message, ...fields } = record
  Object.assign(instance, fields, known ? {} : { name: 'UnknownError', originalName: record.name })
  return instance
}
