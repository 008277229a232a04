/**
 * Validates a tool call's input against a plain JSON Schema with ajv, for tools declared with
 * the AI SDK's `jsonSchema()` without a `validate` function (the AI SDK itself would pass such
 * input to `execute` unchecked). Zod and other Standard Schema tools keep their own validator.
 *
 * Drafts: 2020-12 and 2019-09 when `$schema` says so, draft-07 otherwise (what `jsonSchema()`
 * is typed as). `format` keywords are not checked (no format plugin); unknown keywords are
 * ignored (`strict: false`) rather than refused, as providers accept them.
 */
import type Ajv from 'ajv'
import type { ValidateFunction } from 'ajv'
import type Ajv2019 from 'ajv/dist/2019'
import type Ajv2020 from 'ajv/dist/2020'
import { asSchema, type ToolSet } from 'ai'
import { InvalidOptionError } from '../core/errors'

/** The outcome of one validation: the input is fine, or a message saying what is wrong. */
export type JsonSchemaCheck = { ok: true } | { ok: false; message: string }

const options = { strict: false, allErrors: false, validateFormats: false } as const
let draft07: Ajv | undefined
let draft2019: Ajv2019 | undefined
let draft2020: Ajv2020 | undefined
const compiled = new WeakMap<object, ValidateFunction>()

// ajv is loaded on first use: most apps' tools carry zod schemas, and loading it costs ~0.1-0.4 s at start-up.
function ajvFor(schema: Record<string, unknown>): Ajv | Ajv2019 | Ajv2020 {
  const uri = typeof schema.$schema === 'string' ? schema.$schema : ''
  if (uri.includes('2020-12')) return (draft2020 ??= new (require('ajv/dist/2020') as { default: typeof Ajv2020 }).default(options))
  if (uri.includes('2019-09')) return (draft2019 ??= new (require('ajv/dist/2019') as { default: typeof Ajv2019 }).default(options))
  return (draft07 ??= new (require('ajv') as { default: typeof Ajv }).default(options))
}

/**
 * Compiles `schema` once (cached by object) and returns its validator. Throws when ajv cannot
 * compile it (an invalid schema), with ajv's message.
 *
 * @example
 * const check = jsonSchemaValidator({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] })
 * check({ path: 'a' }) // { ok: true }
 * check({}) // { ok: false, message: "must have required property 'path'" }
 */
export function jsonSchemaValidator(schema: unknown): (input: unknown) => JsonSchemaCheck {
  if (typeof schema === 'boolean') return schema ? () => ({ ok: true }) : () => ({ ok: false, message: 'the schema accepts no input' })
  if (typeof schema !== 'object' || schema === null) throw new TypeError('a JSON Schema must be an object or a boolean')
  let validate = compiled.get(schema)
  if (!validate) {
    const ajv = ajvFor(schema as Record<string, unknown>)
    // A schema with an $id would clash with itself when compiled again by another tool set.
    const { $id: _id, ...withoutId } = schema as Record<string, unknown>
    validate = ajv.compile(withoutId)
    compiled.set(schema, validate)
  }
  const check = validate
  return (input) => {
    if (check(input)) return { ok: true }
    return { ok: false, message: describeErrors(check) }
  }
}

function describeErrors(validate: ValidateFunction): string {
  const [first] = validate.errors ?? []
  if (!first) return 'the input does not match the schema'
  const where = first.instancePath ? `${first.instancePath} ` : ''
  return `${where}${first.message ?? 'is invalid'}`.trim()
}

/**
 * Compiles, once at `createEngine`, the plain JSON Schema of every tool that has no validator
 * of its own, so a schema ajv cannot compile fails there, naming the tool, instead of failing
 * every call of it later.
 *
 * @example
 * await checkToolSchemas({ bash: tool({ inputSchema: jsonSchema({ type: 'object' }), execute }) })
 */
export async function checkToolSchemas(tools: ToolSet): Promise<void> {
  for (const [name, definition] of Object.entries(tools)) {
    const schema = asSchema(definition.inputSchema)
    if (schema.validate) continue
    try {
      jsonSchemaValidator(await schema.jsonSchema)
    } catch (error) {
      throw new InvalidOptionError(`tools.${name}.inputSchema`, error instanceof Error ? error.message : String(error), 'a JSON Schema that ajv can compile')
    }
  }
}
