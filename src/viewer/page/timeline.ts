/**
 * A turn at a glance: its visits to the chart's states, in order, each a bar on one time axis
 * (the turn's start to its end, or to now while it runs) with what the turn did there, what it
 * waited for and who settled the wait, and the fallbacks and failed attempts marked. Readable at
 * 100 % on a phone: it needs no chart. What a state means comes from the chart (`into` on the
 * path, the chart's `meta.work` and `meta.wait`), not from its name.
 */
import type { PathStep, TurnView } from '../wire'
import { readableEvent } from '../../chart/readable-event'
import { el } from './dom'
import { duration } from './format'
import { visitsOf, type Visit } from './visits'

/** The bar's kind, its colour: the work's bound, a wait, or neither (the start, the step gate). */
function kindOf(step: PathStep | undefined): string {
  const into = step?.into
  if (!into) return 'other'
  return into.kind === 'wait' ? 'wait' : into.bound
}

/** What the visit's line says: how long, what the state did or waited for, how it was left. */
function noteOf(visit: Visit, entered: PathStep | undefined, left: PathStep | undefined, now: number): string {
  if (visit.final) return 'the turn ends'
  const took = duration((visit.end ?? now) - visit.start) + (visit.end === null ? ' so far' : '')
  const into = entered?.into
  const what = into ? (into.kind === 'wait' ? `waited for ${into.label}` : into.label) : ''
  const settled = into?.kind === 'wait' && left ? `, settled by ${readableEvent(left.event)}` : ''
  const marks = [entered?.note].filter(Boolean).join('; ')
  return [took, what + settled, marks].filter(Boolean).join(' · ')
}

/** The most visits a timeline shows (half from the start, half from the end). */
const shownAtMost = 40

/**
 * @example
 * article.append(timeline(turn)) // <ol class="timeline">, one row per visit
 */
export function timeline(turn: TurnView, now = Date.now()): HTMLElement {
  const visits = visitsOf(turn)
  const bySeq = new Map(turn.path.map((step) => [step.seq, step]))
  const start = turn.time.created
  const end = Math.max(...visits.map((v) => v.end ?? now), start + 1)
  const span = end - start
  const row = (visit: Visit, i: number) => {
    const entered = bySeq.get(visit.seq)
    const left = visits[i + 1] ? bySeq.get(visits[i + 1].seq) : undefined
    const from = ((visit.start - start) / span) * 100
    const width = visit.final ? 0 : (((visit.end ?? now) - visit.start) / span) * 100
    return el(
      'li',
      { class: `tl-row tl-${visit.final ? 'final' : kindOf(entered)}`, 'data-state': visit.state, 'data-seq': visit.seq },
      el('span', { class: 'tl-state mono' }, visit.state),
      el('span', { class: 'tl-track', 'aria-hidden': 'true' }, el('span', { class: 'tl-bar', style: `left: ${from.toFixed(2)}%; width: ${width.toFixed(2)}%` })),
      el('span', { class: 'tl-note' }, noteOf(visit, entered, left, now)),
    )
  }
  // A long turn shows its first and last visits; the numbered path under the chart has them all.
  const rows =
    visits.length <= shownAtMost
      ? visits.map(row)
      : [
          ...visits.slice(0, shownAtMost / 2).map(row),
          el('li', { class: 'tl-row tl-more dim' }, `… ${visits.length - shownAtMost} more states (the path under the chart lists every one)`),
          ...visits.slice(-shownAtMost / 2).map((visit, i) => row(visit, visits.length - shownAtMost / 2 + i)),
        ]
  return el('ol', { class: 'timeline', 'data-timeline': turn.id, 'aria-label': `The turn at a glance: ${visits.length} states over ${duration(span)}` }, ...rows)
}
