/**
 * One turn drawn on the laid-out chart: compound states as boxes holding their children, every
 * edge with its arrowhead and its label (event, guard), the states the turn visited marked with
 * their visits, the edges it took highlighted and numbered in the order it took them (a badge
 * per transition on its edge, its time and how long the turn stayed after it in the badge's
 * tooltip), the running turn's state marked, with its live clock or retry countdown.
 */
import { readableEvent } from '../../chart/readable-event'
import { compoundBox, drawingText, stateBox, type ChartDrawing, type DrawnBox, type DrawnEdge } from '../chart-drawing'
import type { PathStep, TurnView } from '../wire'
import { everyTick } from './clocks'
import { svg } from './dom'
import { duration, offset } from './format'
import { visitsByState, visitsOf, type Visit } from './visits'

const badgeRadius = 8
/** Badges on one edge closer than this are drawn as one badge listing their numbers. */
const badgeSpacing = 20

type Point = [number, number]

function pathData(points: Point[]): string {
  return points.map(([x, y], i) => `${i === 0 ? 'M' : 'L'}${x},${y}`).join(' ')
}

/** The point at `distance` along a polyline. */
function pointAlong(points: Point[], distance: number): Point {
  let left = distance
  for (let i = 1; i < points.length; i++) {
    const [x1, y1] = points[i - 1]
    const [x2, y2] = points[i]
    const length = Math.hypot(x2 - x1, y2 - y1)
    if (left <= length || i === points.length - 1) {
      const t = length === 0 ? 0 : Math.min(1, left / length)
      return [x1 + (x2 - x1) * t, y1 + (y2 - y1) * t]
    }
    left -= length
  }
  return points[0]
}

function polylineLength(points: Point[]): number {
  let total = 0
  for (let i = 1; i < points.length; i++) total += Math.hypot(points[i][0] - points[i - 1][0], points[i][1] - points[i - 1][1])
  return total
}

/** A text element that must fit `room` px: `fitTexts` squeezes it if the font is wider than the layout assumed. */
function fitted(attributes: Record<string, string | number>, room: number, text: string) {
  return svg('text', { ...attributes, 'data-room': Math.floor(room) }, text)
}

/** Squeezes the texts of `root` that overflow their room (call once they are rendered). */
export function fitTexts(root: ParentNode): void {
  for (const text of root.querySelectorAll<SVGTextElement>('text[data-room]')) {
    const room = Number(text.dataset.room)
    text.removeAttribute('textLength')
    let width = 0
    try {
      width = text.getComputedTextLength()
    } catch {
      // Not rendered (a closed <details>): fitted when it opens.
    }
    if (width > room) {
      text.setAttribute('textLength', String(room))
      text.setAttribute('lengthAdjust', 'spacingAndGlyphs')
    }
  }
}

/** What a state's box says of its visits, in at most `chars` characters. */
function visitLine(visits: Visit[], start: number, chars: number, now: number, retryAt: number | null): string {
  const stay = (v: Visit) => (v.final ? 'end' : v.end === null ? `${duration(now - v.start)}…` : duration(v.end - v.start))
  const name = (v: Visit) => (v.seq === 0 ? 'start' : `#${v.seq}`)
  const last = visits[visits.length - 1]
  const tail = last.end === null && retryAt !== null ? `retry in ${duration(Math.max(0, retryAt - now))}` : stay(last)
  if (visits.length === 1) return `${name(last)} ${offset(last.start - start)} · ${tail}`
  const total = visits.reduce((sum, v) => sum + (v.end === null ? now : v.end) - v.start, 0)
  const ongoing = last.end === null ? ` · ${tail}` : ''
  const summary = ` · ${duration(total)}${ongoing}`
  const names = visits.map(name)
  let line = `${visits.length}×: ${names.join(' ')}${summary}`
  for (let keep = names.length - 1; line.length > chars && keep >= 1; keep--) {
    line = `${visits.length}×: ${names.slice(0, keep).join(' ')} … ${names[names.length - 1]}${summary}`
  }
  return line
}

/** Every visit of a state in words, for its tooltip. */
function visitTitle(state: string, visits: Visit[], start: number): string {
  if (visits.length === 0) return `${state}: not visited`
  const one = (v: Visit) =>
    `${v.seq === 0 ? 'start' : `#${v.seq}`} at ${offset(v.start - start)}${v.final ? ' (the turn ended here)' : v.end === null ? ' (here now)' : ` for ${duration(v.end - v.start)}`}`
  return `${state}: ${visits.map(one).join('; ')}`
}

function drawBox(box: DrawnBox, turn: TurnView, visits: Visit[], start: number) {
  const { x, y, width, height } = box
  const current = turn.outcome === null && turn.state === box.id
  const classes = ['box', `box-${box.kind}`]
  if (box.kind === 'initial') {
    return svg('g', { class: classes.join(' '), 'data-box': box.id, 'data-parent': box.parent ?? '' }, svg('circle', { cx: x + width / 2, cy: y + height / 2, r: width / 2 }))
  }
  if (box.kind === 'compound') {
    return svg(
      'g',
      { class: classes.join(' '), 'data-box': box.id, 'data-state': box.id, 'data-parent': box.parent ?? '' },
      svg('rect', { x, y, width, height, rx: 10 }),
      fitted({ class: 'name', x: x + compoundBox.padding, y: y + compoundBox.nameBaseline }, width - 2 * compoundBox.padding, box.id),
    )
  }
  classes.push(visits.length ? 'visited' : 'unvisited')
  if (current) classes.push('current')
  if (visits.some((v) => v.final)) classes.push('ended')
  const retryAt = current && turn.retryAt !== null ? turn.retryAt : null
  const room = width - 2 * stateBox.paddingX
  const g = svg(
    'g',
    { class: classes.join(' '), 'data-box': box.id, 'data-state': box.id, 'data-parent': box.parent ?? '', 'data-visits': visits.map((v) => v.seq).join(' ') },
    svg('title', {}, visitTitle(box.id, visits, start)),
    svg('rect', { x, y, width, height, rx: 6 }),
    box.kind === 'final' ? svg('rect', { class: 'inner', x: x + 3, y: y + 3, width: width - 6, height: height - 6, rx: 4 }) : null,
    fitted({ class: 'name', x: x + width / 2, y: y + (visits.length ? stateBox.nameBaseline : height / 2 + 4) }, room, box.id),
  )
  if (visits.length) {
    const info = fitted({ class: 'info', x: x + width / 2, y: y + stateBox.infoBaseline }, room, '')
    const chars = Math.floor(room / drawingText.info.charWidth)
    const write = () => (info.textContent = visitLine(visits, start, chars, Date.now(), retryAt))
    if (visits[visits.length - 1].end === null) everyTick(info, write)
    else write()
    g.append(info)
  }
  return g
}

/**
 * Where `count` badges go on an edge: spread along it, clear of its label and of its ends
 * (the arrowhead, the boxes' borders); evenly along it if no such room is left.
 */
function badgeSpots(edge: DrawnEdge, count: number): Point[] {
  const points = edge.points as Point[]
  const length = polylineLength(points)
  const label = edge.label
  const clear = (distance: number) => {
    if (distance < badgeRadius + 4 || distance > length - badgeRadius - 10) return false
    if (!label) return true
    const [x, y] = pointAlong(points, distance)
    const r = badgeRadius + 2
    return x + r < label.x || x - r > label.x + label.width || y + r < label.y || y - r > label.y + label.height
  }
  const free: number[] = []
  for (let distance = 0; distance <= length; distance += 2) if (clear(distance)) free.push(distance)
  if (free.length === 0) return Array.from({ length: count }, (_, i) => pointAlong(points, (length * (i + 1)) / (count + 1)))
  return Array.from({ length: count }, (_, i) => pointAlong(points, free[Math.floor(((i + 0.5) * free.length) / count)]))
}

/** The numbered badges of the transitions drawn on one edge (one badge listing them all if the edge is too short for each its own). */
function drawBadges(edge: DrawnEdge, steps: Array<{ step: PathStep; member: string }>, stayed: Map<number, string>, start: number) {
  const length = polylineLength(edge.points as Point[])
  const title = ({ step }: { step: PathStep }) =>
    `#${step.seq} at ${offset(step.time - start)}: ${step.from} → ${step.to} on ${readableEvent(step.event)}${stayed.has(step.seq) ? `; then ${stayed.get(step.seq)}` : ''}`
  if (steps.length * badgeSpacing > length) {
    const text = steps.map(({ step }) => step.seq).join(',')
    const [[cx, cy]] = badgeSpots(edge, 1)
    const width = Math.max(2 * badgeRadius, text.length * 6.2 + 8)
    return [
      svg(
        'g',
        { class: 'badge', 'data-seq': steps.map(({ step }) => step.seq).join(' '), 'data-edge': edge.id, 'data-member': steps.map((s) => s.member).join(' '), transform: `translate(${cx},${cy})` },
        svg('title', {}, steps.map(title).join('\n')),
        svg('rect', { x: -width / 2, y: -badgeRadius, width, height: 2 * badgeRadius, rx: badgeRadius }),
        svg('text', { y: 3.5 }, text),
      ),
    ]
  }
  const spots = badgeSpots(edge, steps.length)
  return steps.map((entry, i) => {
    const [cx, cy] = spots[i]
    return svg(
      'g',
      { class: 'badge', 'data-seq': entry.step.seq, 'data-edge': edge.id, 'data-member': entry.member, transform: `translate(${cx},${cy})` },
      svg('title', {}, title(entry)),
      svg('circle', { r: badgeRadius }),
      svg('text', { y: 3.5 }, String(entry.step.seq)),
    )
  })
}

/**
 * The turn on the chart, as an SVG element of the drawing's size (chart-view.ts zooms it). Arrowheads are the page's shared markers (`#tc-arrow`, `#tc-arrow-taken`).
 *
 * @example
 * figure.append(drawChart(drawing, turn))
 * fitTexts(figure)
 */
export function drawChart(drawing: ChartDrawing, turn: TurnView): SVGSVGElement {
  const start = turn.time.created
  const visits = visitsOf(turn)
  const byState = visitsByState(visits)
  const edgeOfMember = new Map(drawing.edges.flatMap((edge) => edge.members.map((m) => [m.id, edge] as const)))
  const takenMembers = new Set(turn.path.flatMap((step) => step.edges))
  const takenEdges = new Set([...takenMembers].map((id) => edgeOfMember.get(id)?.id))
  // Each transition numbered on the last edge it took (the one that reached its state).
  const badges = new Map<string, Array<{ step: PathStep; member: string }>>()
  for (const step of turn.path) {
    const member = step.edges[step.edges.length - 1]
    const edge = member === undefined ? undefined : edgeOfMember.get(member)
    if (edge) badges.set(edge.id, [...(badges.get(edge.id) ?? []), { step, member }])
  }
  const stayed = new Map<number, string>()
  for (const visit of visits) {
    if (visit.seq > 0) stayed.set(visit.seq, visit.final ? `the turn ended in ${visit.state}` : visit.end === null ? `in ${visit.state} now` : `${duration(visit.end - visit.start)} in ${visit.state}`)
  }

  const root = svg('svg', {
    class: 'chart',
    viewBox: `0 0 ${drawing.width} ${drawing.height}`,
    width: drawing.width,
    height: drawing.height,
    role: 'img',
    'aria-label': `The turn's path through the chart: ${['idle', ...turn.path.map((s) => s.to)].join(', then ')}`,
    'data-turn': turn.id,
  })
  const compounds = drawing.boxes.filter((b) => b.kind === 'compound')
  const others = drawing.boxes.filter((b) => b.kind !== 'compound')
  const layer = (name: string) => svg('g', { class: name })
  const boxesBelow = layer('compounds')
  for (const box of compounds) boxesBelow.append(drawBox(box, turn, [], start))
  const edges = layer('edges')
  const labels = layer('labels')
  for (const edge of drawing.edges) {
    const taken = takenEdges.has(edge.id)
    edges.append(
      svg(
        'g',
        { class: `edge${taken ? ' taken' : ''} edge-${edge.kind}`, 'data-edge': edge.id, 'data-source': edge.source, 'data-target': edge.target, 'data-members': edge.members.map((m) => m.id).join(' ') },
        svg('path', { d: pathData(edge.points as Point[]), 'marker-end': taken ? 'url(#tc-arrow-taken)' : 'url(#tc-arrow)' }),
      ),
    )
    if (!edge.label) continue
    const { x, y, width, height } = edge.label
    const group = svg('g', { class: `label${taken ? ' taken' : ''}`, 'data-edge': edge.id }, svg('rect', { x, y, width, height, rx: 3 }))
    let line = 0
    for (const member of edge.members) {
      for (const text of member.lines) {
        const baseline = y + 2 + drawingText.label.lineHeight * (line + 1) - 3
        group.append(fitted({ x: x + 4, y: baseline, class: takenMembers.has(member.id) ? 'taken' : '', 'data-member': member.id }, width - 8, text))
        line++
      }
    }
    labels.append(group)
  }
  const boxesAbove = layer('states')
  for (const box of others) boxesAbove.append(drawBox(box, turn, byState.get(box.id) ?? [], start))
  const numbers = layer('badges')
  for (const edge of drawing.edges) {
    const steps = badges.get(edge.id)
    if (steps) numbers.append(...drawBadges(edge, steps, stayed, start))
  }
  root.append(boxesBelow, edges, labels, boxesAbove, numbers)
  return root
}
