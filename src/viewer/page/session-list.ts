/** The list of sessions (the page's navigation), newest activity visible at a glance. */
import type { SessionSummary } from '../wire'
import { el } from './dom'
import { clock } from './format'
import { sessionHref } from './session-view'

/**
 * `listed`: the server has answered with the list (until then an empty list is not known to be empty).
 *
 * @example
 * nav.replaceChildren(sessionList(sessions, 'ses_…', true))
 */
export function sessionList(sessions: SessionSummary[], selected: string | undefined, listed: boolean): HTMLElement {
  if (!listed) return el('p', { class: 'dim empty', 'data-loading': '' }, 'Loading…')
  if (sessions.length === 0) return el('p', { class: 'dim empty' }, 'No sessions.')
  return el(
    'ul',
    { class: 'session-list' },
    ...sessions.map((s) => {
      const running = s.turns.some((t) => t.outcome === null)
      const outcomes = s.turns.map((t) => t.outcome ?? 'running')
      return el(
        'li',
        {},
        el(
          'a',
          { class: `session${running ? ' live' : ''}`, href: sessionHref(s.id), 'data-session': s.id, 'aria-current': s.id === selected ? 'page' : null },
          el('span', { class: 'title' }, s.title || s.id),
          el('span', { class: 'dim' }, `${clock(s.time.created)} · ${s.messages} messages`),
          el('span', { class: 'dim outcomes' }, outcomes.length ? `${outcomes.length} turns: ${outcomes.join(', ')}` : 'no turns'),
        ),
      )
    }),
  )
}
