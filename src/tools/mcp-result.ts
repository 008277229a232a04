/**
 * MCP tool results (`CallToolResult`): one with `isError: true` is the tool's failure, not its
 * output. `@ai-sdk/mcp`'s tools return it as their output (they do not throw), so without this a
 * failed MCP call would be a completed part the model reads as success.
 */
import { McpToolError } from '../core/errors'

/** True for a tool made by `@ai-sdk/mcp` (`createMCPClient(...).tools()`): it carries the MCP tool's `_meta`. */
export function isMcpTool(tool: unknown): boolean {
  return typeof tool === 'object' && tool !== null && Object.hasOwn(tool, '_meta')
}

/**
 * The text of an MCP result with `isError: true` (its text content joined), or `undefined` for
 * any other value.
 *
 * @example
 * mcpErrorText({ isError: true, content: [{ type: 'text', text: 'disk full' }] }) // 'disk full'
 */
export function mcpErrorText(output: unknown): string | undefined {
  if (typeof output !== 'object' || output === null || (output as { isError?: unknown }).isError !== true) return undefined
  const content = (output as { content?: unknown }).content
  if (!Array.isArray(content)) return ''
  return content
    .map((item: { type?: unknown; text?: unknown }) => (item && item.type === 'text' && typeof item.text === 'string' ? item.text : JSON.stringify(item)))
    .join('\n')
}

/**
 * Throws `McpToolError` when `output` is an MCP error result of `tool`.
 *
 * @example
 * throwIfMcpError('deploy', output, 'ops') // throws McpToolError('disk full')
 */
export function throwIfMcpError(tool: string, output: unknown, server?: string): void {
  const text = mcpErrorText(output)
  if (text !== undefined) throw new McpToolError(tool, text, server)
}
