/** The `mcp` option (MCP servers the engine owns), checked at `createEngine` before any server is connected. */
import { InvalidOptionError } from '../core/errors'
import { maxTimerMs } from '../core/timer-limit'
import type { McpOptions } from '../tools/mcp-options'
import { isPlainObject } from './call-settings'

const serverKeys = ['transport', 'trust', 'approval', 'idempotent', 'tools', 'prefix', 'timeoutMs', 'connectTimeoutMs', 'reconnect']

function stringArray(option: string, value: unknown): void {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw new InvalidOptionError(option, value, 'an array of strings')
}

function stringRecord(option: string, value: unknown): void {
  if (!isPlainObject(value) || Object.values(value).some((v) => typeof v !== 'string')) throw new InvalidOptionError(option, '(values hidden)', 'an object of string values')
}

function integer(option: string, value: unknown, min: number, max: number): void {
  if (value !== undefined && (!Number.isInteger(value) || (value as number) < min || (value as number) > max)) throw new InvalidOptionError(option, value, `an integer from ${min} to ${max}`)
}

/**
 * Checks `mcp` (values of headers and env are never echoed in the error).
 *
 * @example
 * validateMcp({ servers: { docs: { transport: { type: 'http', url: 'http://127.0.0.1:8080/mcp' } } } })
 */
export function validateMcp(mcp: unknown): asserts mcp is McpOptions | undefined {
  if (mcp === undefined) return
  if (!isPlainObject(mcp) || !isPlainObject(mcp.servers)) throw new InvalidOptionError('mcp', mcp, '{ servers: { name: { transport, ... } } }')
  for (const key of Object.keys(mcp)) if (key !== 'servers') throw new InvalidOptionError(`mcp.${key}`, mcp[key], 'servers (unknown option)')
  for (const [name, server] of Object.entries(mcp.servers)) {
    const where = `mcp.servers.${name}`
    if (!isPlainObject(server)) throw new InvalidOptionError(where, server, '{ transport, ... }')
    for (const key of Object.keys(server)) if (!serverKeys.includes(key)) throw new InvalidOptionError(`${where}.${key}`, '(value)', `one of ${serverKeys.join(', ')} (unknown option)`)
    const transport = server.transport
    if (!isPlainObject(transport)) throw new InvalidOptionError(`${where}.transport`, transport, "{ type: 'http', url, headers? } or { type: 'stdio', command, args?, env?, cwd? }")
    if (transport.type === 'http') {
      let url: URL | undefined
      try {
        url = new URL(String(transport.url))
      } catch {
        url = undefined
      }
      if (typeof transport.url !== 'string' || !url || !/^https?:$/.test(url.protocol)) throw new InvalidOptionError(`${where}.transport.url`, '(url)', 'an http:// or https:// URL')
      if (transport.headers !== undefined) stringRecord(`${where}.transport.headers`, transport.headers)
    } else if (transport.type === 'stdio') {
      if (typeof transport.command !== 'string' || !transport.command) throw new InvalidOptionError(`${where}.transport.command`, transport.command, 'a command to run')
      if (transport.args !== undefined) stringArray(`${where}.transport.args`, transport.args)
      if (transport.env !== undefined) stringRecord(`${where}.transport.env`, transport.env)
      if (transport.cwd !== undefined && typeof transport.cwd !== 'string') throw new InvalidOptionError(`${where}.transport.cwd`, transport.cwd, 'a directory')
    } else throw new InvalidOptionError(`${where}.transport.type`, transport.type, "'http' or 'stdio'")
    if (server.trust !== undefined && typeof server.trust !== 'boolean') throw new InvalidOptionError(`${where}.trust`, server.trust, 'a boolean')
    const approval = server.approval
    if (approval !== undefined && typeof approval !== 'function' && !['destructive', 'always', 'never'].includes(approval as string)) throw new InvalidOptionError(`${where}.approval`, approval, "'destructive', 'always', 'never' or a function of the tool")
    if (server.idempotent !== undefined && typeof server.idempotent !== 'boolean') stringArray(`${where}.idempotent`, server.idempotent)
    if (server.tools !== undefined) stringArray(`${where}.tools`, server.tools)
    if (server.prefix !== undefined && typeof server.prefix !== 'string') throw new InvalidOptionError(`${where}.prefix`, server.prefix, 'a string')
    integer(`${where}.timeoutMs`, server.timeoutMs, 1, maxTimerMs)
    integer(`${where}.connectTimeoutMs`, server.connectTimeoutMs, 1, maxTimerMs)
    if (server.reconnect !== undefined) {
      if (!isPlainObject(server.reconnect)) throw new InvalidOptionError(`${where}.reconnect`, server.reconnect, '{ attempts?, initialDelayMs?, maxDelayMs? }')
      integer(`${where}.reconnect.attempts`, server.reconnect.attempts, 1, 100)
      integer(`${where}.reconnect.initialDelayMs`, server.reconnect.initialDelayMs, 0, maxTimerMs)
      integer(`${where}.reconnect.maxDelayMs`, server.reconnect.maxDelayMs, 0, maxTimerMs)
    }
  }
}
