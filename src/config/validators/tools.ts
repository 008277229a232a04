/** `tools` (AI SDK tools with `execute`: turnchart runs them) and `toolExecution`. */
import type { ToolSet } from 'ai'
import { InvalidOptionError } from '../../core/errors'
import type { EngineOptions } from '../options'
import { nonNegativeInteger, optionGroup, timerMs } from '../option-values'

export function resolveTools(options: EngineOptions): { tools: ToolSet; toolExecution: { concurrency: number; timeoutMs: number; maxOutputBytes: number } } {
  const tools = optionGroup('tools', options.tools) as ToolSet
  for (const [name, tool] of Object.entries(tools)) {
    if (typeof tool !== 'object' || tool === null) throw new InvalidOptionError(`tools.${name}`, tool, 'an AI SDK tool() definition')
    if (typeof tool.execute !== 'function') throw new InvalidOptionError(`tools.${name}.execute`, tool.execute, 'a function (turnchart runs the tools)')
  }
  const execution = optionGroup('toolExecution', options.toolExecution, ['concurrency', 'timeoutMs', 'maxOutputBytes'])
  return {
    tools,
    toolExecution: {
      concurrency: nonNegativeInteger('toolExecution.concurrency', execution.concurrency, 4, 1),
      timeoutMs: timerMs('toolExecution.timeoutMs', execution.timeoutMs, 300_000, 1),
      maxOutputBytes: nonNegativeInteger('toolExecution.maxOutputBytes', execution.maxOutputBytes, 100_000, 64),
    },
  }
}
