/**
 * A tool's input checked against the tool's own schema: its `validate` (zod, valibot, …) or,
 * for a plain JSON Schema (`jsonSchema()` without `validate`), ajv. Used for the model's tool
 * calls and for an approval's edited input.
 */
import { asSchema, type Tool } from 'ai'
import { jsonSchemaValidator } from './json-schema-validator'

export type InputCheck = { ok: true; value: unknown } | { ok: false; message: string }

/** The part of an AI SDK schema a check needs. */
export interface CheckableSchema {
  jsonSchema: unknown
  validate?: (value: unknown) => PromiseLike<{ success: true; value: unknown } | { success: false; error: Error }> | { success: true; value: unknown } | { success: false; error: Error }
}

/**
 * @example
 * const check = await checkInput(asSchema(tool.inputSchema), { env: 'staging' })
 * if (!check.ok) throw new Error(check.message)
 */
export async function checkInput(schema: CheckableSchema, value: unknown): Promise<InputCheck> {
  if (!schema.validate) {
    let check: ReturnType<typeof jsonSchemaValidator>
    try {
      check = jsonSchemaValidator(await schema.jsonSchema)
    } catch (error) {
      return { ok: false, message: `the tool's input schema cannot be compiled: ${error instanceof Error ? error.message : String(error)}` }
    }
    const result = check(value)
    return result.ok ? { ok: true, value } : { ok: false, message: result.message }
  }
  try {
    const result = await schema.validate(value)
    return result.success ? { ok: true, value: result.value } : { ok: false, message: result.error.message }
  } catch (error) {
    return { ok: false, message: error instanceof Error ? error.message : String(error) }
  }
}

/** `checkInput` against a tool definition's `inputSchema`. */
export function checkToolInput(tool: Tool, value: unknown): Promise<InputCheck> {
  return checkInput(asSchema(tool.inputSchema) as CheckableSchema, value)
}
