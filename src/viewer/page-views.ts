/**
 * The session as the viewer's page shows it: the conversation (a file's bytes left out, their
 * size kept) and each turn with its path through the drawn chart.
 */
import { waitOf, workOf } from '../../machines/turn.machine'
import type { TurnInput } from '../../machines/turn.types'
import type { ScheduleRecord, Store } from '../store/store'
import type { PageMessage, PagePart, ScheduleLine, SessionPage, TurnView } from './wire'
import { turnPath } from './turn-path'
import { ruleText } from '../schedule/schedule-rule'
import { viewSession, type TurnTree } from './read-views'
import type { MessageWithParts, Part } from '../core/types'

/** A part without a file's bytes: a page pushed on every change stays small. */
function pagePart(part: Part): PagePart {
  if (part.type !== 'file' || part.data === undefined) return part
  const { data, ...rest } = part
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
  return { ...rest, bytes: Math.floor((data.length * 3) / 4) - padding }
}

/** Undefined for an unknown session. */
export async function sessionPage(store: Store, sessionId: string): Promise<SessionPage | undefined> {
  const view = await viewSession(store, sessionId)
  if (!view) return undefined
  const turns: TurnView[] = []
  for (const turn of view.turns) turns.push(await turnView(store, turn))
  return { session: view.session, messages: view.messages.map(pageMessage), turns, schedules: view.schedules.map(scheduleLine) }
}

/** A stored schedule as the page lists it, its rule said in words. */
function scheduleLine(schedule: ScheduleRecord): ScheduleLine {
  return { id: schedule.id, when: ruleText(schedule.rule), next: schedule.next, paused: schedule.paused, missed: schedule.missed, ...(schedule.lastTurnId ? { lastTurnId: schedule.lastTurnId } : {}) }
}

const pageMessage = ({ info, parts }: MessageWithParts): PageMessage => ({ info, parts: parts.map(pagePart) })

/**
 * What the page is told of a turn's `state` by the chart (the page has no chart of its own to
 * ask): what it waits for on a person or the world, or the attempt its retry delay waits for.
 *
 * @example
 * stateFields(record.state) // { waitingFor: 'a decision on its tool calls (approve or deny)' }
 */
export function stateFields(state: string): Pick<TurnView, 'waitingFor' | 'retrying'> {
  const wait = waitOf(state)
  const attempt = workOf(state)?.attempt
  return { ...(wait ? { waitingFor: wait.label } : {}), ...(attempt ? { retrying: attempt } : {}) }
}

/** A turn with its path on the drawing, and its child turns (run trees) the same way, with their messages. */
async function turnView(store: Store, tree: TurnTree): Promise<TurnView> {
  const { transitions, children, output, ...turn } = tree
  const input = (await store.turns.input(turn.id)) as TurnInput | undefined
  const { steps, mismatch } = turnPath(input, transitions)
  const childViews: TurnView[] = []
  for (const child of children) childViews.push({ ...(await turnView(store, child)), messages: child.messages.map(pageMessage) })
  return { ...turn, ...stateFields(turn.state), path: steps, ...(output === undefined ? {} : { output }), ...(mismatch === undefined ? {} : { mismatch }), ...(childViews.length ? { children: childViews } : {}) }
}
