/**
 * The frame a turn's chart is seen through: the chart at a zoom (100 % by default, where its
 * labels are at their own size, 11 px, whatever the window), panned by scrolling, by dragging
 * with the mouse or with the keys, zoomed with − / + (or Ctrl + the wheel, a trackpad's pinch),
 * and "Whole chart" to see all of it at once. The frame is as wide as the panel; the chart is
 * larger than that, so the frame first shows the turn's own part of it: the state the turn is in
 * or ended in. On a narrow screen the chart waits behind "Show the chart" and the
 * list of transitions comes first (page.html's CSS).
 */
import type { ChartDrawing } from '../chart-drawing'
import type { TurnView } from '../wire'
import { drawChart, fitTexts } from './chart-svg'
import { el } from './dom'

/** The zooms − and + step through; 1 draws the labels at their own size. */
const zooms = [0.25, 0.33, 0.5, 0.67, 0.8, 1, 1.25, 1.5, 2]

/** What a rebuilt view takes over from the one it replaces (main.ts's carryOver). */
export interface ViewPlace {
  zoom: number
  left: number
  top: number
  shown: boolean
}

/** A view's parts, read from its DOM (the page keeps no other record of it). */
interface View {
  root: HTMLElement
  figure: HTMLElement
  chart: SVGSVGElement
  /** The drawing's own size. */
  width: number
  height: number
}

function viewOf(root: HTMLElement): View {
  const figure = root.querySelector<HTMLElement>('figure.chart')!
  const chart = figure.querySelector<SVGSVGElement>('svg.chart')!
  const { width, height } = chart.viewBox.baseVal
  return { root, figure, chart, width, height }
}

function zoomOf(view: View): number {
  return Number(view.root.dataset.zoom)
}

/** Draws the chart at `zoom`, keeping the point at the frame's centre where it was. */
function setZoom(view: View, zoom: number): void {
  const { figure, chart } = view
  const before = zoomOf(view)
  const centre = [(figure.scrollLeft + figure.clientWidth / 2) / before, (figure.scrollTop + figure.clientHeight / 2) / before]
  view.root.dataset.zoom = String(zoom)
  chart.style.width = `${view.width * zoom}px`
  chart.style.height = `${view.height * zoom}px`
  view.root.querySelector('.zoom-level')!.textContent = `${Math.round(zoom * 100)} %`
  figure.scrollTo(centre[0] * zoom - figure.clientWidth / 2, centre[1] * zoom - figure.clientHeight / 2)
}

/** On a narrow screen: the chart shown, or behind its button. */
function setShown(view: View, shown: boolean): void {
  view.root.classList.toggle('shown', shown)
  view.root.querySelector('.show-chart')!.textContent = shown ? 'Hide the chart' : 'Show the chart'
  if (shown) placeChart(view.root)
}

/** The zoom at which the whole chart fits the frame. */
function wholeZoom(view: View): number {
  const { figure } = view
  return Math.min(1, figure.clientWidth / view.width, figure.clientHeight / view.height)
}

function step(view: View, direction: 1 | -1): void {
  const zoom = zoomOf(view)
  const next = direction > 0 ? zooms.find((z) => z > zoom + 0.001) : [...zooms].reverse().find((z) => z < zoom - 0.001)
  if (next !== undefined) setZoom(view, next)
}

/** Drag with the mouse to pan (touch screens scroll the frame natively). */
function dragToPan(figure: HTMLElement): void {
  let from: { x: number; y: number } | null = null
  figure.addEventListener('pointerdown', (event) => {
    if (event.pointerType !== 'mouse' || event.button !== 0) return
    from = { x: event.clientX, y: event.clientY }
    figure.setPointerCapture(event.pointerId)
    figure.classList.add('panning')
  })
  figure.addEventListener('pointermove', (event) => {
    if (!from) return
    figure.scrollBy(from.x - event.clientX, from.y - event.clientY)
    from = { x: event.clientX, y: event.clientY }
  })
  const stop = () => ((from = null), figure.classList.remove('panning'))
  figure.addEventListener('pointerup', stop)
  figure.addEventListener('pointercancel', stop)
}

/** The drawing's box (its own units) around the turn's part of the chart: the state it is in or ended in, else every state it visited. */
function turnBox(chart: SVGSVGElement): { x: number; y: number; width: number; height: number } | null {
  const here = chart.querySelector<SVGGElement>('.current[data-state]') ?? chart.querySelector<SVGGElement>('.ended[data-state]')
  const groups = here ? [here] : [...chart.querySelectorAll<SVGGElement>('.visited[data-state]')]
  const boxes = groups.map((g) => g.querySelector('rect')!.getBBox())
  if (boxes.length === 0) return null
  const x = Math.min(...boxes.map((b) => b.x))
  const y = Math.min(...boxes.map((b) => b.y))
  return { x, y, width: Math.max(...boxes.map((b) => b.x + b.width)) - x, height: Math.max(...boxes.map((b) => b.y + b.height)) - y }
}

/**
 * Fits the texts of the charts on screen under `root` (their details open, their chart shown)
 * and shows, the first time, the turn's part of the chart in the frame: centred on it, from its
 * top-left corner when it is larger than the frame.
 */
export function placeChart(root: ParentNode): void {
  const found = root instanceof HTMLElement && root.matches('.chart-view') ? [root] : [...root.querySelectorAll<HTMLElement>('.chart-view')]
  for (const element of found) {
    const view = viewOf(element)
    if (view.figure.clientWidth === 0) continue
    fitTexts(view.figure)
    if (element.dataset.placed !== undefined) continue
    element.dataset.placed = ''
    const box = turnBox(view.chart)
    if (!box) continue
    const zoom = zoomOf(view)
    const { figure } = view
    const left = Math.min(box.x * zoom - 8, (box.x + box.width / 2) * zoom - figure.clientWidth / 2)
    const top = Math.min(box.y * zoom - 8, (box.y + box.height / 2) * zoom - figure.clientHeight / 2)
    figure.scrollTo(Math.max(0, left), Math.max(0, top))
  }
}

/** Where the reader left a view: its zoom, its scroll, whether the chart was shown. */
export function viewPlace(root: ParentNode): ViewPlace | null {
  const element = root.querySelector<HTMLElement>('.chart-view[data-placed]')
  if (!element) return null
  const view = viewOf(element)
  return { zoom: zoomOf(view), left: view.figure.scrollLeft, top: view.figure.scrollTop, shown: element.classList.contains('shown') }
}

/** Puts a rebuilt view where the reader left the one it replaces (once the view is in the page). */
export function restoreView(root: ParentNode, place: ViewPlace): void {
  const element = root.querySelector<HTMLElement>('.chart-view')
  if (!element) return
  const view = viewOf(element)
  element.dataset.placed = ''
  setShown(view, place.shown)
  setZoom(view, place.zoom)
  requestAnimationFrame(() => view.figure.scrollTo(place.left, place.top))
}

/**
 * @example
 * details.append(chartView(drawing, turn))
 * placeChart(details) // once it is in the page and open
 */
export function chartView(drawing: ChartDrawing, turn: TurnView): HTMLElement {
  const chart = drawChart(drawing, turn)
  const figure = el('figure', { class: 'chart', tabindex: 0, 'aria-label': 'The chart: drag or scroll to pan, − and + to zoom' }, chart)
  const button = (label: string, className: string, title: string) => el('button', { type: 'button', class: className, title }, label)
  const out = button('−', 'zoom-out', 'Zoom out')
  const into = button('+', 'zoom-in', 'Zoom in')
  const whole = button('Whole chart', 'zoom-whole', 'Fit the whole chart in the frame')
  const actual = button('100 %', 'zoom-actual', 'Labels at their own size')
  const show = button('Show the chart', 'show-chart', 'Show the chart')
  const root = el(
    'div',
    { class: 'chart-view', 'data-zoom': 1 },
    el(
      'div',
      { class: 'chart-tools' },
      show,
      el('span', { class: 'zoom-tools' }, out, el('span', { class: 'zoom-level mono', 'aria-live': 'polite' }, '100 %'), into, actual, whole),
      el('span', { class: 'dim hint' }, 'numbers on the edges: the order of the transitions (hover for times)'),
    ),
    figure,
  )
  const view = viewOf(root)
  chart.style.width = `${drawing.width}px`
  chart.style.height = `${drawing.height}px`
  out.addEventListener('click', () => step(view, -1))
  into.addEventListener('click', () => step(view, 1))
  actual.addEventListener('click', () => setZoom(view, 1))
  whole.addEventListener('click', () => setZoom(view, wholeZoom(view)))
  show.addEventListener('click', () => setShown(view, !root.classList.contains('shown')))
  figure.addEventListener('wheel', (event) => {
    if (!event.ctrlKey) return
    event.preventDefault()
    step(view, event.deltaY < 0 ? 1 : -1)
  })
  figure.addEventListener('keydown', (event) => {
    if (event.key === '+' || event.key === '=' || event.key === '-') {
      event.stopPropagation()
      step(view, event.key === '-' ? -1 : 1)
    }
  })
  dragToPan(figure)
  return root
}
