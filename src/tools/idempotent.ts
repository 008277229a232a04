/**
 * Marks a tool as idempotent: safe to run again after a crash interrupted it. Recovery re-runs
 * only such tools; any other tool that was running becomes an error part
 * ("interrupted by a restart") that the model sees.
 */
import type { Tool } from 'ai'

const idempotentMark = Symbol.for('turnchart.idempotent')

/**
 * Returns `tool`, marked idempotent.
 *
 * @example
 * tools: { read: idempotent(tool({ description: 'Read a file', inputSchema, execute })) }
 */
export function idempotent<T extends Tool>(tool: T): T {
  Object.defineProperty(tool, idempotentMark, { value: true, enumerable: false })
  return tool
}

/** True for a tool marked with `idempotent()` or declared with `idempotent: true`. */
export function isIdempotent(tool: unknown): boolean {
  if (typeof tool !== 'object' || tool === null) return false
  return (tool as Record<symbol, unknown>)[idempotentMark] === true || (tool as { idempotent?: unknown }).idempotent === true
}
