/**
 * An approval that edits a call's input: allowed only for the tools the engine names in
 * `editableApprovals` (an edit hands the tool's input to whoever approves), and checked against
 * the tool's schema before it is accepted.
 */
import type { ToolSet } from 'ai'
import { InvalidArgumentError } from '../core/errors'
import { checkToolInput } from './validate-tool-input'

/** `editableApprovals`: every tool's approvals may edit the input (`true`), those of the named tools, or none. */
export type EditableApprovals = boolean | readonly string[]

/**
 * The edited input, as the tool's schema parses it. Throws `InvalidArgumentError` (naming
 * `options.input`) when the tool's approvals may not edit, or the input does not fit its schema.
 *
 * @example
 * const input = await checkApprovalEdit(tools, ['deploy'], 'deploy', { env: 'staging' })
 */
export async function checkApprovalEdit(tools: ToolSet, editable: EditableApprovals, toolName: string, input: unknown): Promise<unknown> {
  const allowed = editable === true || (Array.isArray(editable) && editable.includes(toolName))
  if (!allowed) {
    throw new InvalidArgumentError('options.input', input, `no edited input: the approvals of tool '${toolName}' may not edit it (editableApprovals)`)
  }
  const tool = Object.hasOwn(tools, toolName) ? tools[toolName] : undefined
  if (!tool) throw new InvalidArgumentError('options.input', input, `an input for tool '${toolName}', which this engine does not have`)
  const check = await checkToolInput(tool, input)
  if (!check.ok) throw new InvalidArgumentError('options.input', input, `an input that fits tool '${toolName}': ${check.message}`)
  return check.value
}
