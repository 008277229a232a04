/** `tools` (AI SDK tools with `execute`: turnchart runs them) and `toolExecution`. */
import type { ToolSet } from 'ai'
import { InvalidOptionError } from '../core/errors'
import type { EngineOptions } from './options'
import { nonNegativeInteger, optionGroup, timerMs } from './option-values'

export function resolveTools(options: EngineOptions): {
  tools: ToolSet
  toolExecution: { concurrency: number; timeoutMs: number; maxOutputBytes: number }
  editableApprovals: boolean | readonly string[]
  approvalTimeoutMs: number | undefined
} {
  const tools = optionGroup('tools', options.tools) as ToolSet
  for (const [name, tool] of Object.entries(tools)) {
    if (typeof tool !== 'object' || tool === null) throw new InvalidOptionError(`tools.${name}`, tool, 'an AI SDK tool() definition')
    if (typeof tool.execute !== 'function') throw new InvalidOptionError(`tools.${name}.execute`, tool.execute, 'a function (turnchart runs the tools)')
  }
  const execution = optionGroup('toolExecution', options.toolExecution, ['concurrency', 'timeoutMs', 'maxOutputBytes'])
  const editable = options.editableApprovals ?? false
  if (typeof editable !== 'boolean') {
    if (!Array.isArray(editable)) throw new InvalidOptionError('editableApprovals', editable, 'true, false or an array of tool names')
    for (const name of editable) {
      if (typeof name !== 'string' || !Object.hasOwn(tools, name)) throw new InvalidOptionError('editableApprovals', name, `the name of a registered tool (${Object.keys(tools).join(', ') || 'none registered'})`)
    }
  }
  return {
    tools,
    editableApprovals: Array.isArray(editable) ? [...editable] : editable,
    approvalTimeoutMs: options.approvalTimeoutMs === undefined ? undefined : timerMs('approvalTimeoutMs', options.approvalTimeoutMs, 0, 1),
    toolExecution: {
      concurrency: nonNegativeInteger('toolExecution.concurrency', execution.concurrency, 4, 1),
      timeoutMs: timerMs('toolExecution.timeoutMs', execution.timeoutMs, 300_000, 1),
      maxOutputBytes: nonNegativeInteger('toolExecution.maxOutputBytes', execution.maxOutputBytes, 100_000, 64),
    },
  }
}
