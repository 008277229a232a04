/**
 * The viewer's page: the routes (`#/`, `#/session/<id>`, `#/session/<id>/turn/<id>`), one live
 * event stream from the server for the session list and the open session (it reconnects by
 * itself, and each connection starts with everything), and the rendering of both.
 */
import type { ChartDrawing } from '../chart-drawing'
import type { LiveEvents, SessionPage, SessionSummary } from '../wire'
import { reconcile, type Block } from './blocks'
import { placeChart, restoreView, viewPlace } from './chart-view'
import { el } from './dom'
import { installKeys } from './keys'
import { chooseSession, missingSession, missingTurn, readFailure } from './notices'
import { sessionList } from './session-list'
import { activityStatus } from './turn-activity'
import { sessionBlocks, sessionHref } from './session-view'

const drawing = JSON.parse(document.getElementById('chart-drawing')!.textContent!) as ChartDrawing

interface Route {
  session?: string
  turn?: string
}

function parseRoute(hash: string): Route {
  const match = /^#\/session\/([^/]+)(?:\/turn\/([^/]+))?/.exec(hash)
  if (!match) return {}
  const decode = (part: string) => {
    try {
      return decodeURIComponent(part)
    } catch {
      return part
    }
  }
  return { session: decode(match[1]), turn: match[2] ? decode(match[2]) : undefined }
}

const state = {
  route: parseRoute(location.hash),
  sessions: [] as SessionSummary[],
  listed: false,
  page: undefined as SessionPage | undefined,
  missing: undefined as string | undefined,
  failure: undefined as string | undefined,
  connected: false,
}

const nav = document.getElementById('sessions')!
const main = document.getElementById('main')!
const status = document.getElementById('status')!
const keysHelp = document.getElementById('keys') as HTMLDetailsElement

let source: EventSource | undefined
let watching: string | undefined | null = null

/** One stream for the list and the routed session; a new session means a new stream. */
function connect() {
  if (source && watching === state.route.session) return
  source?.close()
  watching = state.route.session
  state.page = undefined
  state.missing = undefined
  const session = state.route.session
  source = new EventSource(session ? `/api/live?session=${encodeURIComponent(session)}` : '/api/live')
  const on = <K extends keyof LiveEvents>(name: K, handle: (data: LiveEvents[K]) => void) =>
    source!.addEventListener(name, (event) => {
      handle(JSON.parse((event as MessageEvent<string>).data) as LiveEvents[K])
      render()
    })
  on('sessions', (sessions) => {
    state.sessions = sessions
    state.listed = true
    state.failure = undefined
  })
  on('session', (page) => {
    state.page = page
    state.missing = undefined
    state.failure = undefined
  })
  on('missing', ({ session: id }) => {
    state.missing = id
    state.page = undefined
  })
  on('failure', ({ message }) => {
    state.failure = message
  })
  source.addEventListener('open', () => {
    state.connected = true
    renderStatus()
  })
  source.addEventListener('error', () => {
    state.connected = false
    renderStatus()
  })
}

function renderStatus() {
  const activity = activityStatus(state.page?.turns ?? [], Date.now())
  const live = activity.live
  status.textContent = !state.connected ? 'offline: reconnecting to the viewer…' : activity.text
  status.className = !state.connected ? 'status offline' : live ? 'status live' : 'status'
}

function renderNav() {
  const focused = (document.activeElement as HTMLElement | null)?.dataset?.session
  nav.replaceChildren(el('h2', { class: 'nav-title' }, 'Sessions'), sessionList(state.sessions, state.route.session, state.listed))
  if (focused) nav.querySelector<HTMLElement>(`a[data-session="${CSS.escape(focused)}"]`)?.focus()
}

/** What the reader changed in a turn that is rebuilt by an update: its chart opened or closed, zoomed. */
function carryOver(from: HTMLElement, to: HTMLElement) {
  const fromChart = from.querySelector('details.turn-chart') as HTMLDetailsElement | null
  const toChart = to.querySelector('details.turn-chart') as HTMLDetailsElement | null
  if (fromChart && toChart) toChart.open = fromChart.open
  const place = viewPlace(from)
  if (place) restoreView(to, place)
}

/** The route the last arrival (scroll, focus) was made for: live updates do not move the reader. */
let arrivedAt: string | undefined

function renderMain() {
  const { route } = state
  document.body.classList.toggle('in-session', route.session !== undefined)
  const blocks: Block[] = []
  const notice = (key: string, node: () => HTMLElement, signature = key) => blocks.push({ key, signature, build: node })
  if (state.failure) notice('failure', () => readFailure(state.failure!), state.failure)
  let ready = state.listed
  // (before the list's first answer, "No sessions yet" would be a guess)
  if (route.session === undefined && state.listed) notice('choose', () => chooseSession(state.sessions.length), String(state.sessions.length))
  else if (route.session === undefined) notice('loading', () => el('p', { class: 'dim' }, 'Loading…'))
  else if (state.missing === route.session) notice('missing', () => missingSession(route.session!), route.session)
  else if (state.page && state.page.session.id === route.session) {
    const page = state.page
    if (route.turn && !page.turns.some((t) => t.id === route.turn)) notice('missing-turn', () => missingTurn(page.session.id, route.turn!), route.turn)
    blocks.push(...sessionBlocks(page, drawing, route.turn))
  } else {
    ready = false
    notice('loading', () => el('p', { class: 'dim' }, 'Loading…'))
  }
  const built = reconcile(main, blocks, carryOver)
  for (const node of built) placeChart(node)
  if (ready) arrive()
  document.body.dataset.ready = String(ready)
}

/** Once per navigation: show the turn asked for (its chart open, in view, focused), or the top of the session. */
function arrive() {
  const key = location.hash
  if (arrivedAt === key) return
  arrivedAt = key
  const { turn } = state.route
  const article = turn ? main.querySelector<HTMLElement>(`article[data-turn="${CSS.escape(turn)}"]`) : null
  if (article) {
    const chart = article.querySelector('details.turn-chart') as HTMLDetailsElement | null
    if (chart && !chart.open) chart.open = true
    article.scrollIntoView({ block: 'start' })
    article.focus({ preventScroll: true })
  } else {
    window.scrollTo(0, 0)
    main.querySelector<HTMLElement>('.session-head h2, .error-page h2')?.focus({ preventScroll: true })
  }
}

function render() {
  renderNav()
  renderMain()
  renderStatus()
}

function onRoute() {
  state.route = parseRoute(location.hash)
  connect()
  render()
}

/** Routes at once (keys pressed in quick succession each see the route the last one made), and again on `hashchange`, harmlessly. */
function go(hash: string) {
  if (location.hash === hash) return
  location.hash = hash
  onRoute()
}

installKeys({
  session(step) {
    const ids = state.sessions.map((s) => s.id)
    if (ids.length === 0) return
    const at = state.route.session ? ids.indexOf(state.route.session) : -1
    const next = at < 0 ? (step === 1 ? 0 : ids.length - 1) : Math.min(ids.length - 1, Math.max(0, at + step))
    go(sessionHref(ids[next]))
  },
  turn(step) {
    const page = state.page
    if (!page || page.session.id !== state.route.session || page.turns.length === 0) return
    const ids = page.turns.map((t) => t.id)
    const at = state.route.turn ? ids.indexOf(state.route.turn) : -1
    const next = at < 0 ? (step === 1 ? 0 : ids.length - 1) : Math.min(ids.length - 1, Math.max(0, at + step))
    go(sessionHref(page.session.id, ids[next]))
  },
  back() {
    go('#/')
  },
  help() {
    keysHelp.open = !keysHelp.open
  },
})

window.addEventListener('hashchange', onRoute)

connect()
render()
