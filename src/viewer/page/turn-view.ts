/**
 * One turn: its outcome and times, a running turn's retry countdown, its messages, its path
 * through the chart (the drawing, and the same path as a numbered list: every visit with its
 * time and how long it lasted), and under it the child turns its tools started (run trees: each
 * drawn the same way one level in, named by the tool call that started it, with its own
 * messages and chart).
 */
import type { ChartDrawing } from '../chart-drawing'
import type { PageMessage, TurnView } from '../wire'
import type { StorageWaited } from '../../core/types'
import { chartView, placeChart } from './chart-view'
import { everyTick } from './clocks'
import { el } from './dom'
import { renderMessage } from './conversation'
import { clock, duration, offset } from './format'
import { visitsOf } from './visits'
import { timeline } from './timeline'
import { turnActivity } from './turn-activity'
import { readableEvent, stallText } from '../../chart/readable-event'
import type { TurnStall } from '../../../machines/turn.types'

export interface TurnContext {
  drawing: ChartDrawing
  sessionId: string
  /** The turn's number in its session (1-based), or its place under its parent. */
  label: string
  /** The messages of the turn (a child turn's come with it, in `turn.messages`). */
  messages: PageMessage[]
  /** Whether the chart is shown open (the selected turn, a running turn). */
  open: boolean
  depth: number
}

function outcomeOf(turn: TurnView): string {
  return turn.outcome ?? 'running'
}

/** How long the turn took, or has been running (live). */
function turnTime(turn: TurnView): HTMLElement {
  const span = el('span', { class: 'took' })
  const last = turn.path[turn.path.length - 1]
  if (turn.outcome !== null) span.textContent = duration((last?.time ?? turn.time.updated) - turn.time.created)
  else everyTick(span, () => (span.textContent = `${duration(Date.now() - turn.time.created)} so far`))
  return span
}

/** "Retrying: attempt 3 in 1.4 s", counting down until the next attempt starts. */
function retryCountdown(turn: TurnView): HTMLElement | null {
  const what = turn.retrying
  if (turn.outcome !== null || what === undefined || turn.retryAt === null) return null
  const retryAt = turn.retryAt
  // Nobody runs it (a closed engine released it): no attempt is coming until an engine resumes it.
  if (turnActivity(turn, Date.now()) === 'unowned') {
    return el('p', { class: 'retry dim', role: 'status' }, el('b', {}, 'Retry pending: '), `${what} ${turn.attempt + 1} waits for an engine to resume this turn (no engine runs it)`)
  }
  const text = el('span', { class: 'countdown' })
  everyTick(text, () => {
    const left = retryAt - Date.now()
    text.textContent = left > 0 ? `${what} ${turn.attempt + 1} in ${duration(left)}` : `${what} ${turn.attempt + 1} starting…`
  })
  return el(
    'p',
    { class: 'retry', role: 'status', 'data-retry-at': retryAt },
    el('b', {}, 'Retrying: '),
    text,
    turn.error ? el('span', { class: 'dim' }, ` (after ${turn.error.name}: ${turn.error.message})`) : null,
  )
}

/** The path as a numbered list: the turn's start, then each transition and how long the turn stayed where it led. */
function pathList(turn: TurnView): HTMLElement {
  const visits = visitsOf(turn)
  const stay = new Map(visits.map((v) => [v.seq, v]))
  const start = turn.time.created
  const stayed = (seq: number): HTMLElement => {
    const visit = stay.get(seq)
    const span = el('span', { class: 'stay' })
    if (!visit) span.textContent = 'stays in the same state'
    else if (visit.final) span.textContent = 'the turn ends'
    else if (visit.end !== null) span.textContent = `${duration(visit.end - visit.start)} in ${visit.state}`
    else everyTick(span, () => (span.textContent = `${duration(Date.now() - visit.start)} in ${visit.state} so far`))
    return span
  }
  const item = (seq: number, at: number, move: string, event: string | null, waits: StorageWaited[] = [], stalled?: TurnStall) =>
    el(
      'li',
      { 'data-seq': seq },
      el('span', { class: 'num' }, String(seq)),
      el('span', { class: 'at mono' }, offset(at - start)),
      el('span', { class: 'move mono' }, move),
      event ? el('span', { class: 'event mono' }, event) : null,
      stayed(seq),
      ...waits.map((wait) => el('span', { class: 'storage-wait', 'data-storage-wait': '' }, `waited ${duration(wait.waitedMs)} for the database (${wait.operation})`)),
      stalled ? el('span', { class: 'stalled', 'data-stalled': '' }, stallText(stalled, at)) : null,
    )
  return el(
    'ol',
    { class: 'path', 'aria-label': 'The transitions of the turn, numbered as on the chart' },
    item(0, start, 'start in idle', null),
    ...turn.path.map((step) => item(step.seq, step.time, `${step.from} → ${step.to}`, readableEvent(step.event), step.storageWaits, step.stalled)),
  )
}

/** The turn's path: its states in a line, the chart with its edges numbered (zoom and pan), the list of transitions; or a note that its log was pruned. */
function turnChart(turn: TurnView, context: TurnContext): HTMLElement {
  const states = ['idle', ...turn.path.filter((s) => s.from !== s.to).map((s) => s.to)]
  // An ended turn without a log had it pruned (turnchart prune): its messages stay, no path to draw.
  if (turn.outcome !== null && turn.path.length === 0) return el('p', { class: 'dim', 'data-pruned': '' }, 'Transition log pruned (turnchart prune): its messages remain, its path does not.')
  const chart = el(
    'details',
    { class: 'turn-chart', open: context.open },
    el('summary', {}, el('b', {}, 'Path'), ` (${turn.path.length} transitions): `, el('span', { class: 'mono' }, states.join(' → '))),
    el('div', { class: 'path-body' }, chartView(context.drawing, turn), pathList(turn)),
  )
  // A closed chart is not rendered: it is fitted and placed when it opens.
  chart.addEventListener('toggle', () => chart.open && placeChart(chart))
  return chart
}

/**
 * @example
 * main.append(renderTurn(turn, { drawing, sessionId, label: 'Turn 1', messages, open: true, depth: 0 }))
 */
export function renderTurn(turn: TurnView, context: TurnContext): HTMLElement {
  const outcome = outcomeOf(turn)
  const chart = turnChart(turn, context)
  const children = turn.children ?? []
  const messages = turn.messages ?? context.messages
  // A child is named by the call that started it: "research (call_1)".
  const calls = new Map<string, string>()
  for (const { parts } of messages) for (const part of parts) if (part.type === 'tool') calls.set(part.callId, part.tool)
  const childLabel = (child: TurnView, i: number) => {
    const tool = child.parentCallId ? calls.get(child.parentCallId) : undefined
    return `${context.label}.${i + 1}${tool ? ` · ${tool}` : ''}`
  }
  return el(
    'article',
    { class: `turn depth-${Math.min(context.depth, 3)}`, 'data-turn': turn.id, id: `turn-${turn.id}`, tabindex: -1, 'aria-label': `${context.label}, ${outcome}` },
    el(
      'header',
      { class: 'turn-head' },
      el('h3', {}, context.label, ' ', el('span', { class: `outcome outcome-${outcome}` }, turn.outcome ?? `running (${turn.state})`)),
      el('span', { class: 'dim' }, `${clock(turn.time.created)} · `, turnTime(turn), ' · ', el('span', { class: 'mono' }, turn.id)),
    ),
    turn.error && turn.outcome !== null ? el('p', { class: 'error-line' }, `${turn.error.name}: ${turn.error.message}`) : null,
    'output' in turn ? el('p', { class: 'output-line' }, el('b', {}, 'Output: '), el('code', { class: 'mono' }, JSON.stringify(turn.output))) : null,
    retryCountdown(turn),
    turn.mismatch ? el('p', { class: 'warning' }, `The log does not replay through this chart: ${turn.mismatch}`) : null,
    turn.path.length ? timeline(turn) : null,
    messages.length ? el('div', { class: 'turn-messages' }, ...messages.map((m) => renderMessage(m.info, m.parts))) : null,
    chart,
    el(
      'div',
      { class: 'turn-children', 'data-children-of': turn.id, 'aria-label': children.length ? `Child turns of ${context.label}` : null },
      ...children.map((child, i) => renderTurn(child, { ...context, label: childLabel(child, i), messages: [], open: child.outcome === null, depth: context.depth + 1 })),
    ),
  )
}
