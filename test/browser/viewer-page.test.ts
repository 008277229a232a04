/**
 * The viewer in a real browser, on the demo's database: `turnchart demo --db <file>` writes it,
 * `turnchart view <file>` serves it (a child process), Debian's headless Chromium driven by
 * playwright-core reads it as a person would. What is checked is what the page draws: the
 * state boxes (siblings never overlap, each child inside its parent), an arrowhead at the end
 * of every edge, the numbered path against the turn's logged transitions, every visit of a
 * revisited state, a turn another engine runs moving on in the page while it watches (its
 * retry countdown ticking), no horizontal scroll from 360 px to wide screens, errors as pages,
 * and the keys. The docs' screenshots are taken here too, into a temporary folder: `npm run
 * docs:images` runs this file with TURNCHART_DOCS_IMAGES=docs/images to refresh docs/images/.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { tool } from 'ai'
import { z } from 'zod'
import { createEngine, type Engine, type TransitionRecord } from '../../src'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'
import { openReadOnlyStore } from '../../src/store/backends/read-only-store'
import { runCli } from '../cli/run-cli'
import { cliArgs } from '../support/compiled'
import { readableEvent } from '../../src/chart/readable-event'
import { modelFor } from '../support/harness'
import { chromiumBinary, testNeeding } from '../support/requires'

const binary = chromiumBinary()
const { executablePath } = binary
const browserTest = testNeeding(binary)
const root = path.resolve(__dirname, '../..')
/** Where the screenshots go: a temporary folder, or docs/images for `npm run docs:images`. */
let images: string

jest.setTimeout(120_000)

let work: string
let demoDb: string
let view: ChildProcess | undefined
let url: string
let browser: Browser
let server: ScriptedServer
let engine: Engine
/** The demo's session and its four turns with their logged transitions and child turns (run trees), read from the file. */
interface LoggedTurn {
  id: string
  transitions: TransitionRecord[]
  children: LoggedTurn[]
}
let demo: { session: string; turns: LoggedTurn[] }

beforeAll(async () => {
  if (!binary.available) return
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-viewer-'))
  images = process.env.TURNCHART_DOCS_IMAGES ? path.resolve(root, process.env.TURNCHART_DOCS_IMAGES) : path.join(work, 'images')
  demoDb = path.join(work, 'demo.db')
  const made = await runCli(['demo', '--db', demoDb], {}, 60_000)
  expect(made.code).toBe(0)
  const store = await openReadOnlyStore(demoDb)
  demo = await store.read(async (s) => {
    const [session] = await s.sessions.list()
    const turnIds = [...new Set((await s.messages.list(session.id)).map((m) => m.info.turnId).filter((id): id is string => Boolean(id)))]
    const logged = async (id: string): Promise<LoggedTurn> => ({
      id,
      transitions: await s.transitions.list(id),
      children: await Promise.all((await s.turns.children(id)).map((child) => logged(child.id))),
    })
    return { session: session.id, turns: await Promise.all(turnIds.map(logged)) }
  })
  await store.close()
  expect(demo.turns).toHaveLength(4)
  expect(demo.turns.map((t) => t.children.length)).toEqual([0, 0, 1, 0])
  view = spawn(process.execPath, [...cliArgs(), 'view', demoDb], { cwd: root, env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  url = await new Promise<string>((resolve, reject) => {
    let stdout = ''
    view!.stdout!.on('data', (chunk) => {
      stdout += chunk
      const match = /open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout)
      if (match) resolve(match[1])
    })
    view!.on('exit', () => reject(new Error(`turnchart view exited: ${stdout}`)))
  })
  browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] })
  // Another engine on the same file (this process; the viewer is the child): the live turns.
  server = await startScriptedServer()
  const deploy = tool({ description: 'Deploys (asks first)', inputSchema: z.object({ env: z.string() }), needsApproval: true, execute: async ({ env }) => `deployed to ${env}` })
  engine = await createEngine({ database: demoDb, model: modelFor(server), tools: { deploy }, flushIntervalMs: 20, retry: { maxHeaderDelayMs: 10_000 } })
  fs.mkdirSync(images, { recursive: true })
}, 120_000)

afterAll(async () => {
  await browser?.close()
  await engine?.close()
  await server?.close()
  if (view && view.exitCode === null) {
    const exited = new Promise((resolve) => view!.on('exit', resolve))
    view.kill('SIGTERM')
    await exited
  }
  if (work) fs.rmSync(work, { recursive: true, force: true })
})

/** Script errors of the pages a test opened: none is expected. */
let pageErrors: string[] = []
afterEach(() => {
  const errors = pageErrors
  pageErrors = []
  expect(errors).toEqual([])
})

async function open(hash: string, width = 1280, height = 900): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height } })
  page.on('pageerror', (error) => pageErrors.push(`${hash}: ${error.message}`))
  await page.goto(`${url}${hash}`)
  await page.waitForSelector('body[data-ready="true"]')
  return page
}

/**
 * A screenshot of one element for the docs, the page scrolled to the top (so the sticky header
 * covers none of it). A live page may rebuild the element between finding it and measuring it
 * (CI: no box): it is measured again once it is on screen.
 */
async function shoot(page: Page, selector: string, file: string) {
  await page.evaluate(() => (globalThis as any).scrollTo(0, 0))
  const target = page.locator(selector)
  let box = null
  for (let tries = 0; box === null && tries < 5; tries++) {
    await target.waitFor({ state: 'visible' })
    box = await target.boundingBox()
  }
  expect(box).not.toBeNull()
  await page.screenshot({ path: path.join(images, file), fullPage: true, clip: { x: Math.max(0, box!.x - 8), y: Math.max(0, box!.y - 8), width: box!.width + 16, height: box!.height + 16 } })
}

const turnHash = (turnId: string) => `#/session/${demo.session}/turn/${turnId}`

interface ChartFacts {
  boxes: Array<{ id: string; parent: string; kind: string; x: number; y: number; width: number; height: number }>
  edges: Array<{ id: string; source: string; target: string; marker: string | null; arrowhead: boolean; end: [number, number] }>
  badges: Array<{ seqs: number[]; edge: string; members: string[]; onEdge: boolean }>
  takenLabels: Record<string, string[]>
  states: Record<string, { visits: string; title: string; info: string; classes: string }>
}

/** What the chart of a turn draws, measured in the page (SVG user units: one coordinate system for the whole drawing). */
function chartFacts(page: Page, turnId: string): Promise<ChartFacts> {
  return page.evaluate((id) => {
    const doc = (globalThis as any).document
    const chart = doc.querySelector(`article[data-turn="${id}"] > details svg.chart`)
    const boxes = Array.from(chart.querySelectorAll('g[data-box]')).map((g: any) => {
      const shape = g.querySelector(':scope > rect, :scope > circle')
      const box = shape.getBBox()
      return { id: g.dataset.box, parent: g.dataset.parent, kind: g.classList[1], x: box.x, y: box.y, width: box.width, height: box.height }
    })
    const edges = Array.from(chart.querySelectorAll('g.edge')).map((g: any) => {
      const pathElement = g.querySelector('path')
      const marker = pathElement.getAttribute('marker-end')
      const target = /^url\(#(.+)\)$/.exec(marker ?? '')?.[1]
      const markerElement = target ? doc.getElementById(target) : null
      const end = pathElement.getPointAtLength(pathElement.getTotalLength())
      return {
        id: g.dataset.edge,
        source: g.dataset.source,
        target: g.dataset.target,
        marker,
        arrowhead: !!markerElement && markerElement.tagName.toLowerCase() === 'marker' && !!markerElement.querySelector('path'),
        end: [end.x, end.y] as [number, number],
      }
    })
    const badges = Array.from(chart.querySelectorAll('g.badge')).map((g: any) => {
      const { e: x, f: y } = g.transform.baseVal.consolidate().matrix
      const edgePath = chart.querySelector(`g.edge[data-edge="${g.dataset.edge}"] path`)
      const point = edgePath.ownerSVGElement.createSVGPoint()
      point.x = x
      point.y = y
      return { seqs: g.dataset.seq.split(' ').map(Number), edge: g.dataset.edge, members: g.dataset.member.split(' '), onEdge: edgePath.isPointInStroke(point) }
    })
    const takenLabels: Record<string, string[]> = {}
    for (const text of Array.from(chart.querySelectorAll('.label text.taken')) as any[]) (takenLabels[text.dataset.member] ??= []).push(text.textContent)
    const states: Record<string, { visits: string; title: string; info: string; classes: string }> = {}
    for (const g of Array.from(chart.querySelectorAll('g[data-state][data-visits]')) as any[]) {
      states[g.dataset.state] = { visits: g.dataset.visits, title: g.querySelector('title').textContent, info: g.querySelector('text.info')?.textContent ?? '', classes: g.getAttribute('class') }
    }
    return { boxes, edges, badges, takenLabels, states }
  }, turnId)
}

const intersects = (a: ChartFacts['boxes'][number], b: ChartFacts['boxes'][number]) =>
  a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
const inside = (child: ChartFacts['boxes'][number], parent: ChartFacts['boxes'][number]) =>
  child.x >= parent.x && child.y >= parent.y && child.x + child.width <= parent.x + parent.width && child.y + child.height <= parent.y + parent.height

/** The box `id` and the boxes around it, innermost first. */
function withAncestors(boxes: ChartFacts['boxes'], id: string): string[] {
  const byId = new Map(boxes.map((b) => [b.id, b]))
  const chain: string[] = []
  for (let box = byId.get(id); box; box = byId.get(box.parent)) chain.push(box.id)
  return chain
}

/** How the chart labels the edge a logged event takes. */
const labelOf = (event: string) => (event.startsWith('xstate.after.') ? 'retry timer' : event === 'xstate.stop' ? 'turn.abort' : event)

/**
 * Checks a turn's drawn chart (open in the page): nested boxes that never overlap, an arrowhead
 * on every edge, the path numbered as logged, on the drawing and as a list.
 */
async function expectDrawnPath(page: Page, turn: { id: string; transitions: TransitionRecord[] }): Promise<{ facts: ChartFacts; rows: string[] }> {
  const facts = await chartFacts(page, turn.id)

  // The chart's hierarchy as nested boxes: every child inside its parent, no two siblings overlapping.
  const byId = new Map(facts.boxes.map((b) => [b.id, b]))
  expect(facts.boxes.filter((b) => b.kind === 'box-compound').map((b) => b.id)).toEqual(['running', 'step', 'awaiting-calls', 'compaction'])
  expect(withAncestors(facts.boxes, 'streaming')).toEqual(['streaming', 'step', 'running'])
  expect(withAncestors(facts.boxes, 'compaction-retry-waiting')).toEqual(['compaction-retry-waiting', 'compaction', 'running'])
  expect(withAncestors(facts.boxes, 'call-in-doubt')).toEqual(['call-in-doubt', 'awaiting-calls', 'running'])
  for (const box of facts.boxes) {
    if (box.parent) expect({ box: box.id, inside: inside(box, byId.get(box.parent)!) }).toEqual({ box: box.id, inside: true })
    for (const other of facts.boxes) {
      if (other.id < box.id && other.parent === box.parent) expect({ pair: [box.id, other.id], overlap: intersects(box, other) }).toEqual({ pair: [box.id, other.id], overlap: false })
    }
  }

  // Every edge ends in an arrowhead, at its target's border.
  expect(facts.edges.length).toBeGreaterThan(25)
  for (const edge of facts.edges) {
    const target = byId.get(edge.target)!
    const [x, y] = edge.end
    const onBorder = x >= target.x - 1.5 && x <= target.x + target.width + 1.5 && y >= target.y - 1.5 && y <= target.y + target.height + 1.5 && !(x > target.x + 1.5 && x < target.x + target.width - 1.5 && y > target.y + 1.5 && y < target.y + target.height - 1.5)
    expect({ edge: edge.id, arrowhead: edge.arrowhead, onBorder }).toEqual({ edge: edge.id, arrowhead: true, onBorder: true })
  }

  // The path: transition n numbered once, on an edge from a box holding its `from` to a box
  // holding its `to`, the edge's label naming its event, the number drawn on the edge itself.
  const badgeOf = new Map(facts.badges.flatMap((b) => b.seqs.map((seq) => [seq, b] as const)))
  expect([...badgeOf.keys()].sort((a, b) => a - b)).toEqual(turn.transitions.map((t) => t.seq))
  expect(facts.badges.flatMap((b) => b.seqs)).toHaveLength(turn.transitions.length)
  for (const t of turn.transitions) {
    const badge = badgeOf.get(t.seq)!
    const edge = facts.edges.find((e) => e.id === badge.edge)!
    const member = badge.members[badge.seqs.indexOf(t.seq)] ?? badge.members[0]
    expect({
      seq: t.seq,
      fromInSource: withAncestors(facts.boxes, t.from).includes(edge.source),
      toInTarget: withAncestors(facts.boxes, t.to).includes(edge.target),
      label: facts.takenLabels[member]?.[0],
      onEdge: badge.onEdge,
    }).toEqual({ seq: t.seq, fromInSource: true, toInTarget: true, label: labelOf(t.event), onEdge: true })
  }
  // The same path as a numbered list.
  const rows = await page.locator(`article[data-turn="${turn.id}"] > details ol.path li`).allTextContents()
  expect(rows).toHaveLength(turn.transitions.length + 1)
  for (const t of turn.transitions) expect(rows[t.seq]).toContain(`${t.seq}`), expect(rows[t.seq]).toContain(`${t.from} → ${t.to}`), expect(rows[t.seq]).toContain(readableEvent(t.event))
  return { facts, rows }
}

browserTest("the demo's turns on the laid-out chart: nested boxes that never overlap, an arrowhead on every edge, the path numbered as logged", async () => {
  const page = await open(`#/session/${demo.session}`)
  for (const [index, turn] of demo.turns.entries()) {
    // A turn's link opens its chart.
    await page.click(`a[data-turn-link="${turn.id}"]`)
    await page.waitForSelector(`article[data-turn="${turn.id}"] details.turn-chart[open] svg.chart`)
    const { facts, rows } = await expectDrawnPath(page, turn)

    if (index === 0) {
      // Turn 1 enters streaming three times (the first step through the step gate, the step after the tools, and the retry): every visit is shown.
      const entered = turn.transitions.filter((t) => t.to === 'streaming').map((t) => t.seq)
      expect(entered).toEqual([2, 4, 6])
      const streaming = facts.states.streaming
      expect(streaming.visits).toBe('2 4 6')
      expect(streaming.info).toMatch(/^3×: #2 #4 #6 · \d/)
      for (const seq of entered) expect(streaming.title).toMatch(new RegExp(`#${seq} at \\+[\\d.]+ m?s for [\\d.]+ m?s`))
      for (const seq of entered) expect(rows[seq]).toMatch(/[\d.]+ m?s in streaming/)
      expect(facts.states.completed.classes).toContain('ended')
      await shoot(page, `article[data-turn="${turn.id}"]`, 'viewer-turn.png')
    }
  }
  await page.close()
})

browserTest("run trees: the demo's sub-agent under the turn that called it, named by its call, with its messages and its own chart and path", async () => {
  const parent = demo.turns[2]
  const [child] = parent.children
  const page = await open(`#/session/${demo.session}/turn/${parent.id}`)
  const article = page.locator(`article[data-turn="${parent.id}"] > .turn-children > article[data-turn="${child.id}"]`)
  await article.waitFor()
  expect(await article.locator('h3').first().textContent()).toMatch(/^Turn 3\.1 · researcher completed/)
  expect(await article.locator('.turn-messages').first().textContent()).toContain('Which entries of the current folder are folders?')
  expect(await article.locator('.turn-messages .part-tool').first().textContent()).toMatch(/^tool list\(.*\) completed/)
  // The child's chart opens like any turn's, and is checked the same way.
  await article.locator('> details.turn-chart > summary').click()
  await page.waitForSelector(`article[data-turn="${child.id}"] > details.turn-chart[open] svg.chart`)
  await expectDrawnPath(page, child)
  expect((await article.locator('> details ol.path li .move').allTextContents()).slice(1)).toEqual(['idle → step-gate', 'step-gate → streaming', 'streaming → tool-running', 'tool-running → streaming', 'streaming → completed'])
  await shoot(page, `article[data-turn="${parent.id}"] > .turn-children`, 'viewer-run-tree.png')
  await page.close()
})

browserTest('a turn another engine runs moves on in the page while it watches: its retry countdown ticks, its next states appear, no reload', async () => {
  const session = await engine.createSession({ title: 'live turn' })
  const page = await open(`#/session/${session.id}`)
  await page.waitForSelector('.session-head h2:text-is("live turn")')
  await page.evaluate(() => ((globalThis as any).loadedOnce = true))
  server.error(429, { error: { message: 'Rate limit reached, retry shortly.', type: 'rate_limit_error' } }, { 'retry-after-ms': '3000' })
  server.push({ type: 'stream', chunks: [{ text: 'working on it' }], end: 'hang' })
  const turn = engine.prompt(session.id, 'Count to three')
  const article = page.locator(`article[data-turn="${turn.id}"]`)
  // The turn appears, waiting for its second attempt: the retry-waiting box is current, the countdown ticks.
  await article.locator('g[data-state="retry-waiting"].current').waitFor()
  const countdown = article.locator('p.retry .countdown')
  const first = await countdown.textContent()
  expect(first).toMatch(/^attempt 2 in [\d.]+ s$/)
  await page.waitForFunction((before) => (globalThis as any).document.querySelector('p.retry .countdown')?.textContent !== before, first)
  const later = await countdown.textContent()
  const seconds = (text: string | null) => Number(/in ([\d.]+) s/.exec(text ?? '')?.[1] ?? NaN)
  if (/in [\d.]+ s/.test(later ?? '')) expect(seconds(later)).toBeLessThan(seconds(first))
  expect(await article.locator('g[data-state="retry-waiting"] text.info').textContent()).toMatch(/retry in [\d.]+ m?s/)
  await shoot(page, `article[data-turn="${turn.id}"]`, 'viewer-live.png')
  // The retry fires in the other engine: streaming again, its text arriving.
  await article.locator('g[data-state="streaming"].current').waitFor()
  await article.locator('.part-text', { hasText: 'working on it' }).waitFor()
  expect(await article.locator('g[data-state="streaming"]').getAttribute('data-visits')).toBe('2 4')
  turn.abort()
  await article.locator('.outcome-aborted').first().waitFor()
  await article.locator('g[data-state="aborted"].ended').waitFor()
  expect(await article.locator('g.badge').evaluateAll((badges: any[]) => badges.flatMap((b) => b.dataset.seq.split(' ').map(Number)).sort((a: number, b: number) => a - b))).toEqual([1, 2, 3, 4, 5])
  expect(await page.evaluate(() => (globalThis as any).loadedOnce)).toBe(true)
  await page.close()
})

browserTest('from 360 px to wide screens: no horizontal scroll on the list, a session with every chart open, a turn, an error', async () => {
  const noScroll = () => (globalThis as any).document.documentElement.scrollWidth <= (globalThis as any).document.documentElement.clientWidth
  for (const width of [360, 768, 1280, 1920]) {
    for (const hash of ['#/', `#/session/${demo.session}`, turnHash(demo.turns[0].id), '#/session/ses_nope']) {
      const page = await open(hash, width, 780)
      await page.evaluate(() => (globalThis as any).document.querySelectorAll('details.turn-chart').forEach((d: any) => (d.open = true)))
      expect({ width, hash, noScroll: await page.evaluate(noScroll) }).toEqual({ width, hash, noScroll: true })
      if (width === 360 && hash === turnHash(demo.turns[0].id)) {
        await page.evaluate(() => (globalThis as any).scrollTo(0, 0))
        await page.screenshot({ path: path.join(images, 'viewer-narrow.png') })
      }
      await page.close()
    }
  }
})

/** What a reader sees of a turn's chart: its labels' size on screen, its frame against the panel, what the frame shows. */
function chartOnScreen(page: Page, turnId: string) {
  return page.locator(`article[data-turn="${turnId}"] .chart-view`).evaluate((view: any) => {
    const figure = view.querySelector('figure.chart')
    const frame = figure.getBoundingClientRect()
    const labels = Array.from(view.querySelectorAll('svg.chart .label text')) as any[]
    const sizes = labels.map((t) => parseFloat((globalThis as any).getComputedStyle(t).fontSize) * t.getScreenCTM().a)
    const visible = (selector: string) => {
      const box = view.querySelector(selector)?.getBoundingClientRect()
      return !!box && box.width > 0 && box.left >= frame.left && box.right <= frame.right && box.top >= frame.top && box.bottom <= frame.bottom
    }
    const chart = view.querySelector('svg.chart').getBoundingClientRect()
    return {
      shown: frame.width > 0,
      // (to a hundredth of a pixel: the screen matrix of a 1:1 drawing is 0.99999…)
      smallestLabel: Math.round(Math.min(...sizes) * 100) / 100,
      frameInPanel: frame.left >= view.closest('main').getBoundingClientRect().left && frame.right <= view.closest('main').getBoundingClientRect().right + 0.5,
      ended: visible('g.ended[data-state]'),
      whole: chart.width <= frame.width + 0.5 && chart.height <= frame.height + 0.5,
      scroll: [figure.scrollLeft, figure.scrollTop],
      zoom: view.querySelector('.zoom-level').textContent,
    }
  })
}

browserTest("the chart fits its panel: labels of at least 11 px at 1280×800 and 390×844, the turn's end in view, zoom and pan for the whole chart; on a phone the list first and the chart on demand", async () => {
  const turn = demo.turns[0].id
  const wide = await open(turnHash(turn), 1280, 800)
  const first = await chartOnScreen(wide, turn)
  expect(first).toMatchObject({ shown: true, frameInPanel: true, ended: true, zoom: '100 %' })
  expect(first.smallestLabel).toBeGreaterThanOrEqual(11)
  const tools = (name: string) => wide.locator(`article[data-turn="${turn}"] button.${name}`)
  await tools('zoom-whole').click()
  const whole = await chartOnScreen(wide, turn)
  expect(whole.whole).toBe(true)
  await tools('zoom-actual').click()
  await tools('zoom-in').click()
  const closer = await chartOnScreen(wide, turn)
  expect(closer.zoom).toBe('125 %')
  expect(closer.smallestLabel).toBeGreaterThan(13)
  // Dragging the chart pans it.
  const figure = wide.locator(`article[data-turn="${turn}"] figure.chart`)
  // (the turn at a glance is above it: the chart is brought on screen to be dragged)
  await figure.scrollIntoViewIfNeeded()
  const box = (await figure.boundingBox())!
  await wide.mouse.move(box.x + box.width / 2, box.y + box.height / 2)
  await wide.mouse.down()
  await wide.mouse.move(box.x + box.width / 2 + 120, box.y + box.height / 2 + 60, { steps: 4 })
  await wide.mouse.up()
  const panned = await chartOnScreen(wide, turn)
  expect(panned.scroll[0]).toBeCloseTo(closer.scroll[0] - 120, -1)
  expect(panned.scroll[1]).toBeCloseTo(closer.scroll[1] - 60, -1)
  await wide.screenshot({ path: path.join(images, 'viewer-chart-1280.png') })
  await wide.close()

  const phone = await open(turnHash(turn), 390, 844)
  const article = phone.locator(`article[data-turn="${turn}"]`)
  // The transitions first, readable as text; the chart behind its button.
  expect(await article.locator('ol.path li').first().isVisible()).toBe(true)
  expect(await chartOnScreen(phone, turn)).toMatchObject({ shown: false })
  expect(await article.locator('ol.path .move').first().evaluate((m: any) => parseFloat((globalThis as any).getComputedStyle(m).fontSize))).toBeGreaterThanOrEqual(11)
  await article.locator('button.show-chart').click()
  const onPhone = await chartOnScreen(phone, turn)
  expect(onPhone).toMatchObject({ shown: true, frameInPanel: true, ended: true })
  expect(onPhone.smallestLabel).toBeGreaterThanOrEqual(11)
  // (one reading: the click scrolled the page)
  expect(await article.evaluate((a: any) => a.querySelector('figure.chart').getBoundingClientRect().top > a.querySelector('ol.path').getBoundingClientRect().bottom)).toBe(true)
  expect(await phone.evaluate(() => (globalThis as any).document.documentElement.scrollWidth <= (globalThis as any).document.documentElement.clientWidth)).toBe(true)
  await phone.close()
})

browserTest('a turn at a glance: its states in order as bars on one time axis, what each did, the retry marked with its error; on screen without panning, labels of at least 11 px, at 1280×800 and 390×844', async () => {
  // The demo's turn with the 429: a retry's delay between two model calls.
  const logged = demo.turns.find((t) => t.transitions.some((row) => row.to === 'retry-waiting'))!
  const visited = ['idle', ...logged.transitions.filter((row) => row.from !== row.to).map((row) => row.to)]
  for (const [width, height] of [
    [1280, 800],
    [390, 844],
  ]) {
    const page = await open(turnHash(logged.id), width, height)
    const glance = page.locator(`article[data-turn="${logged.id}"] ol.timeline`)
    await glance.scrollIntoViewIfNeeded()
    const facts = await glance.evaluate((list: any) => {
      const w = globalThis as any
      const rows = [...list.querySelectorAll('li.tl-row')].map((li: any) => ({
        state: li.dataset.state,
        kind: li.className,
        note: li.querySelector('.tl-note')?.textContent ?? '',
        bar: li.querySelector('.tl-bar')?.getBoundingClientRect().width ?? 0,
      }))
      const sizes = [...list.querySelectorAll('.tl-state, .tl-note')].map((node: any) => parseFloat(w.getComputedStyle(node).fontSize))
      const box = list.getBoundingClientRect()
      return { rows, smallest: Math.min(...sizes), left: box.left, right: box.right, viewport: w.innerWidth, scrolls: w.document.documentElement.scrollWidth > w.document.documentElement.clientWidth }
    })
    expect(facts.rows.map((r) => r.state)).toEqual(visited)
    expect(facts.smallest).toBeGreaterThanOrEqual(11)
    expect(facts.left).toBeGreaterThanOrEqual(0)
    expect(facts.right).toBeLessThanOrEqual(facts.viewport)
    expect(facts.scrolls).toBe(false)
    // What each state did, as the chart says it; the retry with the error it waited out.
    const streaming = facts.rows.find((r) => r.state === 'streaming')!
    expect(streaming).toMatchObject({ kind: expect.stringContaining('tl-model'), note: expect.stringContaining('the model stream') })
    expect(streaming.bar).toBeGreaterThan(0)
    const retry = facts.rows.find((r) => r.state === 'retry-waiting')!
    expect(retry).toMatchObject({ kind: expect.stringContaining('tl-retry-delay'), note: expect.stringMatching(/retry's delay.*APIError: Rate limit/) })
    expect(facts.rows.at(-1)).toMatchObject({ state: 'completed', note: 'the turn ends' })
    if (width === 1280) await shoot(page, `article[data-turn="${logged.id}"] ol.timeline`, 'viewer-timeline.png')
    await page.close()
  }
})

browserTest("a wait at a glance: the approval's row is hatched, says what the turn waited for and which decision settled it", async () => {
  const session = await engine.createSession({ title: 'an approval' })
  server.tool('deploy', { env: 'production' }, { id: 'call_deploy' })
  server.text('Deployed.')
  const turn = engine.prompt(session.id, 'Deploy it')
  await new Promise<void>((resolve) => engine.subscribe((e) => e.type === 'turn.transition' && e.turnId === turn.id && e.to === 'awaiting-approval' && resolve()))
  await engine.approve(turn.id, 'call_deploy')
  expect((await turn.done).outcome).toBe('completed')
  const page = await open(`#/session/${session.id}/turn/${turn.id}`, 390, 844)
  const row = page.locator(`article[data-turn="${turn.id}"] ol.timeline li[data-state="awaiting-approval"]`)
  expect(await row.getAttribute('class')).toContain('tl-wait')
  expect(await row.locator('.tl-note').textContent()).toMatch(/waited for a decision on its tool calls \(approve or deny\), settled by .*approved/)
  await page.close()
})

browserTest('errors a user understands: an unknown session, an unknown turn, a page that is not there, each with a way back', async () => {
  const page = await open('#/session/ses_nope', 800, 420)
  const missing = page.locator('[data-notice="missing-session"]')
  expect(await missing.locator('h2').textContent()).toBe('No such session')
  expect(await missing.textContent()).toContain('This database has no session ses_nope.')
  await page.screenshot({ path: path.join(images, 'viewer-missing.png') })
  await missing.locator('a', { hasText: 'All sessions' }).click()
  await page.waitForSelector('[data-notice="choose"]')
  expect(new URL(page.url()).hash).toBe('#/')
  expect(await page.locator('nav.sessions a[data-session]').count()).toBeGreaterThan(0)

  await page.goto(`${url}#/session/${demo.session}/turn/trn_nope`)
  const noTurn = page.locator('[data-notice="missing-turn"]')
  expect(await noTurn.textContent()).toContain('This session has no turn trn_nope.')
  await noTurn.locator('a').click()
  await page.waitForFunction(() => (globalThis as any).location.hash.endsWith('/turn/trn_nope') === false)
  expect(await page.locator('[data-notice="missing-turn"]').count()).toBe(0)
  await page.close()

  const lost = await browser.newPage()
  const response = await lost.goto(`${url}nowhere`)
  expect(response!.status()).toBe(404)
  expect(await lost.locator('h1').textContent()).toBe('Nothing here')
  await lost.locator('a', { hasText: 'All sessions' }).click()
  await lost.waitForSelector('body[data-ready="true"]')
  await lost.close()
})

browserTest('keys: j / k between sessions, n / p between turns, the arrows in the list, u back to the list', async () => {
  const other = await engine.createSession({ title: 'another session' })
  const page = await open('#/')
  const hash = () => new URL(page.url()).hash
  const sessions = await page.locator('nav.sessions a[data-session]').evaluateAll((links: any[]) => links.map((a) => a.dataset.session))
  expect(sessions[0]).toBe(demo.session)
  expect(sessions).toContain(other.id)
  await page.keyboard.press('j')
  await page.waitForSelector(`.session-head h2:text-is("turnchart demo")`)
  expect(hash()).toBe(`#/session/${demo.session}`)
  await page.keyboard.press('n')
  await page.waitForFunction((id) => (globalThis as any).document.activeElement?.dataset?.turn === id, demo.turns[0].id)
  expect(hash()).toBe(turnHash(demo.turns[0].id))
  expect(await page.locator(`article[data-turn="${demo.turns[0].id}"] details.turn-chart`).getAttribute('open')).not.toBeNull()
  await page.keyboard.press('n')
  await page.keyboard.press('n')
  await page.waitForFunction((id) => (globalThis as any).document.activeElement?.dataset?.turn === id, demo.turns[2].id)
  await page.keyboard.press('p')
  await page.waitForFunction((id) => (globalThis as any).document.activeElement?.dataset?.turn === id, demo.turns[1].id)
  await page.keyboard.press('j')
  await page.waitForFunction((id) => (globalThis as any).location.hash === `#/session/${id}`, sessions[1])
  await page.keyboard.press('k')
  await page.waitForFunction((id) => (globalThis as any).location.hash === `#/session/${id}`, demo.session)
  await page.keyboard.press('u')
  await page.waitForSelector('[data-notice="choose"]')
  // In the list: the arrows move between sessions, Enter opens one.
  await page.locator(`nav.sessions a[data-session="${sessions[0]}"]`).focus()
  await page.keyboard.press('ArrowDown')
  expect(await page.evaluate(() => (globalThis as any).document.activeElement?.dataset?.session)).toBe(sessions[1])
  await page.keyboard.press('Enter')
  await page.waitForFunction((id) => (globalThis as any).location.hash === `#/session/${id}`, sessions[1])
  await page.keyboard.press('?')
  expect(await page.locator('details#keys').getAttribute('open')).not.toBeNull()
  await page.close()
})

browserTest('before the viewer first answers, the list and the page say "Loading…", not "No sessions."', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.on('pageerror', (error) => pageErrors.push(`loading: ${error.message}`))
  let answer!: () => void
  const held = new Promise<void>((resolve) => (answer = resolve))
  // The live stream (the list's first answer) is held back until the page has been read.
  await page.route('**/api/live**', async (route) => {
    await held
    await route.continue()
  })
  await page.goto(`${url}#/`)
  await page.waitForSelector('nav.sessions [data-loading]')
  expect({ nav: await page.locator('nav.sessions').textContent(), main: await page.locator('#main').textContent() }).toEqual({ nav: 'SessionsLoading…', main: 'Loading…' })
  answer()
  await page.waitForSelector('[data-notice="choose"]')
  expect(await page.locator('nav.sessions a[data-session]').count()).toBeGreaterThan(0)
  expect(await page.locator('nav.sessions [data-loading]').count()).toBe(0)
  await page.close()
})
