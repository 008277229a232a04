/**
 * A session's page: its title and turns (an index to jump to each), then the conversation
 * grouped by turn, each turn with its chart. Built as keyed blocks (blocks.ts) so that a live
 * update rebuilds only the turn that changed.
 */
import type { ChartDrawing } from '../chart-drawing'
import type { ScheduleLine, SessionPage, TurnView } from '../wire'
import type { Block } from './blocks'
import { renderMessage } from './conversation'
import { el } from './dom'
import { clock, duration } from './format'
import { renderTurn } from './turn-view'

/** `#/session/<id>` and `#/session/<id>/turn/<turnId>`. */
export const sessionHref = (sessionId: string, turnId?: string) => `#/session/${encodeURIComponent(sessionId)}${turnId ? `/turn/${encodeURIComponent(turnId)}` : ''}`

/** The turn whose chart opens first: the one asked for, else a running one, else the last. */
export function turnToOpen(page: SessionPage, selected: string | undefined): string | undefined {
  if (selected && page.turns.some((t) => t.id === selected)) return selected
  return (page.turns.find((t) => t.outcome === null) ?? page.turns[page.turns.length - 1])?.id
}

function turnIndex(page: SessionPage, selected: string | undefined): HTMLElement | null {
  if (page.turns.length === 0) return null
  return el(
    'nav',
    { class: 'turn-index', 'aria-label': 'Turns of this session' },
    el(
      'ol',
      {},
      ...page.turns.map((turn, i) => {
        const last = turn.path[turn.path.length - 1]
        const took = turn.outcome !== null && last ? ` · ${duration(last.time - turn.time.created)}` : ''
        return el(
          'li',
          {},
          el(
            'a',
            { href: sessionHref(page.session.id, turn.id), 'data-turn-link': turn.id, 'aria-current': turn.id === selected ? 'true' : null },
            `Turn ${i + 1} `,
            el('span', { class: `outcome outcome-${turn.outcome ?? 'running'}` }, turn.outcome ?? `running (${turn.state})`),
            took,
          ),
        )
      }),
    ),
  )
}

/** The session's header: its title, counts, where a fork came from, its schedules, the index of its turns. */
function headBlock(page: SessionPage, selected: string | undefined): Block {
  const { session } = page
  return {
    key: 'head',
    signature: JSON.stringify([session, page.messages.length, page.turns.map((t) => [t.id, t.state, t.outcome, t.path.length]), page.schedules, selected]),
    build: () =>
      el(
        'header',
        { class: 'session-head' },
        el('a', { class: 'back', href: '#/' }, '← All sessions'),
        el('h2', { tabindex: -1 }, session.title || session.id),
        el('div', { class: 'dim' }, el('span', { class: 'mono' }, session.id), ` · created ${clock(session.time.created)} · ${page.messages.length} messages · ${page.turns.length} turns`),
        // A fork at a step (`engine.forkTurn`) says where its history came from.
        session.forkedFrom
          ? el('div', { class: 'dim forked-from' }, 'forked from ', el('a', { href: sessionHref(session.forkedFrom.sessionId) }, session.forkedFrom.sessionId), ` turn ${session.forkedFrom.turnId} at step ${session.forkedFrom.step}`)
          : null,
        // Its schedules (`engine.schedule`): each one's rule and next occurrence.
        ...page.schedules.map((schedule) => el('div', { class: 'dim schedule' }, 'schedule ', el('span', { class: 'mono' }, schedule.id), ` · ${schedule.when} · ${scheduleState(schedule)}`)),
        turnIndex(page, selected),
      ),
  }
}

const scheduleState = (schedule: ScheduleLine) =>
  `${schedule.paused ? 'paused' : schedule.next === null ? 'done' : `next ${clock(schedule.next)}`}${schedule.missed ? ` · ${schedule.missed} missed` : ''}`

/**
 * The blocks of a session's page, in order.
 *
 * @example
 * reconcile(main, sessionBlocks(page, drawing, route.turn), carryOver)
 */
export function sessionBlocks(page: SessionPage, drawing: ChartDrawing, selected: string | undefined): Block[] {
  const { session } = page
  const open = turnToOpen(page, selected)
  const head = headBlock(page, selected)
  const numbers = new Map(page.turns.map((t, i) => [t.id, i + 1]))
  const byTurn = new Map<string, SessionPage['messages']>()
  // Each turn takes the place of its first message; a message of no known turn stands alone.
  const order: Array<TurnView | SessionPage['messages'][number]> = []
  for (const message of page.messages) {
    const turnId = message.info.turnId
    const turn = turnId ? page.turns.find((t) => t.id === turnId) : undefined
    if (!turn) order.push(message)
    else if (byTurn.has(turn.id)) byTurn.get(turn.id)!.push(message)
    else byTurn.set(turn.id, [message]), order.push(turn)
  }
  // A turn without a message (none is expected) still gets its place, at the end.
  for (const turn of page.turns) if (!byTurn.has(turn.id)) byTurn.set(turn.id, []), order.push(turn)
  const turnBlock = (turn: TurnView): Block => {
    const messages = byTurn.get(turn.id) ?? []
    return {
      key: `turn:${turn.id}`,
      signature: JSON.stringify([turn, messages]),
      build: () =>
        renderTurn(turn, { drawing, sessionId: session.id, label: `Turn ${numbers.get(turn.id)}`, messages, open: turn.id === open, depth: 0 }),
    }
  }
  return [
    head,
    ...order.map((item): Block =>
      'path' in item ? turnBlock(item) : { key: `message:${item.info.id}`, signature: JSON.stringify(item), build: () => renderMessage(item.info, item.parts) },
    ),
  ]
}
