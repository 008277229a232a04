/** What the page says instead of a view: nothing chosen yet, a session or turn that is not there, a database that cannot be read. */
import { el } from './dom'
import { sessionHref } from './session-view'

/** The main area before a session is chosen. */
export function chooseSession(count: number): HTMLElement {
  return el(
    'section',
    { class: 'notice', 'data-notice': 'choose' },
    el('h2', {}, count ? 'Choose a session' : 'No sessions yet'),
    el('p', {}, count ? 'Pick one in the list, or press j to open the first. Keys: j / k sessions, n / p turns, ? all keys.' : 'This database holds no session. Run a turn (turnchart demo makes a few), and it appears here by itself.'),
  )
}

/** A session id the database does not hold (a stale link, another database's). */
export function missingSession(id: string): HTMLElement {
  return el(
    'section',
    { class: 'notice error-page', role: 'alert', 'data-notice': 'missing-session' },
    el('h2', { tabindex: -1 }, 'No such session'),
    el('p', {}, 'This database has no session ', el('code', {}, id), '. It may have been deleted, or the link comes from another database.'),
    el('p', {}, el('a', { href: '#/', class: 'button' }, '← All sessions')),
  )
}

/** A turn id the session does not hold: shown above the session itself. */
export function missingTurn(sessionId: string, turnId: string): HTMLElement {
  return el(
    'p',
    { class: 'notice-line', role: 'alert', 'data-notice': 'missing-turn' },
    'This session has no turn ',
    el('code', {}, turnId),
    '. ',
    el('a', { href: sessionHref(sessionId) }, 'Show the whole session'),
  )
}

/** The database could not be read (a file replaced or deleted, a server gone): the last view stays under it. */
export function readFailure(message: string): HTMLElement {
  return el(
    'p',
    { class: 'notice-line failure', role: 'alert', 'data-notice': 'failure' },
    el('b', {}, 'The viewer cannot read the database: '),
    message,
    ' It tries again at the next change.',
  )
}
