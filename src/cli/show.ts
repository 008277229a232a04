/**
 * `turnchart show <db> <session> [--json]`: the conversation, message by message with its
 * parts, and for each turn its outcome and the states it went through, then the child turns its
 * tools started (run trees), indented under it, each with its path and messages. Read-only.
 */
import type { MessageWithParts } from '../core/types'
import { viewSession, type ChildTurnTree, type TurnTree } from '../viewer/read-views'
import { stallOf, stallText } from '../chart/readable-event'
import { parseArgs } from './args'
import { CliError, colors, formatPart, openForReading, printable, type CliIO } from './io'
import { describeSchedule } from './schedules'

type Colors = ReturnType<typeof colors>

/** `idle → streaming → …`, or that `prune` deleted the log (an ended turn with no log). */
function pathOf(turn: TurnTree | undefined): string {
  const states = (turn?.transitions ?? []).map((t) => t.to)
  return turn?.outcome && states.length === 0 ? 'transition log pruned' : ['idle', ...states].join(' → ')
}

function turnLines(turn: TurnTree | undefined, id: string, c: Colors, indent: string, name = `turn ${id}`): string[] {
  const lines = [indent + c.cyan(`${name}: ${turn?.outcome ?? `unfinished (${turn?.state ?? '?'})`}`) + c.dim(`  ${pathOf(turn)}`)]
  const schedule = turn?.options?.schedule
  if (schedule) lines.push(c.dim(`${indent}  started by schedule ${printable(schedule.id)} at its occurrence ${new Date(schedule.occurrence).toISOString()}`))
  if (turn?.error) lines.push(c.red(printable(`${indent}  ${turn.error.name}: ${turn.error.message}`)))
  if (turn && 'output' in turn) lines.push(printable(`${indent}  output ${JSON.stringify(turn.output)}`))
  for (const row of turn?.transitions ?? []) {
    for (const wait of row.storageWaits ?? []) lines.push(c.yellow(printable(`${indent}  waited ${(wait.waitedMs / 1000).toFixed(2)} s for the database (${wait.operation}) before #${row.seq} → ${row.to}`)))
    const stall = stallOf(row)
    if (stall) lines.push(c.yellow(printable(`${indent}  #${row.seq} ${stallText(stall, row.time)}`)))
  }
  return lines
}

function messageLines({ info, parts }: MessageWithParts, c: Colors, indent: string): string[] {
  const role = info.summary ? 'summary' : info.role
  const usage = info.tokens ? c.dim(`  tokens in ${info.tokens.input} out ${info.tokens.output}`) : ''
  const lines = [`${indent}${c.bold(role)} ${c.dim(info.id)}${info.finish ? c.dim(`  finish ${info.finish}`) : ''}${usage}`]
  for (const part of parts) lines.push(...formatPart(part, c).split('\n').map((line) => `${indent}  ${line}`))
  if (info.error) lines.push(c.red(printable(`${indent}  error ${info.error.name}: ${info.error.message}`)))
  return lines
}

/** A turn's child turns, each named by the tool call that started it, its messages and its own children below it. */
function childLines(children: ChildTurnTree[], tools: Map<string, string>, c: Colors, indent: string): string[] {
  const lines: string[] = []
  for (const child of children) {
    const tool = child.parentCallId ? tools.get(child.parentCallId) : undefined
    const call = tool ? ` (${printable(tool)}, call ${printable(child.parentCallId ?? '')})` : ''
    lines.push('', ...turnLines(child, child.id, c, indent, `└ child turn ${child.id}${call}`))
    for (const message of child.messages) lines.push(...messageLines(message, c, `${indent}  `))
    lines.push(...childLines(child.children, toolNames(child.messages), c, `${indent}  `))
  }
  return lines
}

/** The tool of each call in these messages, by call id. */
function toolNames(messages: MessageWithParts[]): Map<string, string> {
  const names = new Map<string, string>()
  for (const { parts } of messages) for (const part of parts) if (part.type === 'tool') names.set(part.callId, part.tool)
  return names
}

export async function showCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, flags } = parseArgs(argv, { flags: ['json'], positionals: ['db', 'session'] })
  const [database, sessionId] = positionals
  const store = await openForReading(database)
  const c = colors(io)
  const out = (line = '') => io.stdout.write(`${line}\n`)
  try {
    const view = await store.read((s) => viewSession(s, sessionId))
    if (!view) throw new CliError(`no session ${sessionId} in ${database}`)
    if (flags.has('json')) {
      out(JSON.stringify(view, null, 2))
      return 0
    }
    const { session, messages } = view
    const turns = new Map(view.turns.map((t) => [t.id, t]))
    const tools = toolNames(messages)
    out(c.bold(`session ${session.id}${session.title ? `: ${printable(session.title)}` : ''}`))
    if (session.forkedFrom) out(c.dim(`forked from ${session.forkedFrom.sessionId} turn ${session.forkedFrom.turnId} at step ${session.forkedFrom.step}`))
    for (const schedule of view.schedules) out(c.dim(`schedule ${describeSchedule(schedule)}`))
    let lastTurn: string | undefined
    const endTurn = () => {
      const children = lastTurn ? turns.get(lastTurn)?.children ?? [] : []
      for (const line of childLines(children, tools, c, '  ')) out(line)
    }
    for (const message of messages) {
      const turnId = message.info.turnId
      if (turnId && turnId !== lastTurn) {
        endTurn()
        lastTurn = turnId
        out()
        for (const line of turnLines(turns.get(turnId), turnId, c, '')) out(line)
      }
      for (const line of messageLines(message, c, '')) out(line)
    }
    endTurn()
    return 0
  } finally {
    await store.close()
  }
}
