/**
 * Error classes of turnchart. Each has a stable `name`, the fields a caller needs, a `toJSON()`
 * that gives the JSON-serialisable record stored on an assistant message, and a static
 * `isInstance` that works across copies of the package (no `instanceof`).
 */
export { TurnchartError, type SerializedError } from './turnchart-error'
export * from './provider-errors'
export * from './mcp-errors'
export * from './turn-errors'
export * from './engine-errors'
export * from './web-errors'
export * from './recording-errors'
export * from './call-errors'
export { serializeError, safeMessage } from './serialize'
