/**
 * The chart's properties, proved over its graph as built (src/chart/chart-graph.ts reads the
 * machine), so a state or an edge added later is covered without touching this file:
 *   - every state is reachable from `idle`;
 *   - from every state that is not final, a final state is reachable;
 *   - `turn.abort` takes every state that is not final to `aborted`, unguarded;
 *   - every event a state ignores is one docs/chart.md says it ignores ("What each state ignores").
 * The walk is over the structure: an edge of a compound state leaves each of its leaves, entering
 * a compound state enters its initial child, an edge into a history state may resume any leaf
 * below it, and guards are not evaluated (a guarded edge is an edge that can be taken).
 */
import fs from 'node:fs'
import path from 'node:path'
import { chartGraph, type ChartGraphNode } from '../../src/chart/chart-graph'

const graph = chartGraph()

const nodes = new Map<string, ChartGraphNode & { parent?: string }>()
const collect = (node: ChartGraphNode, parent?: string) => {
  nodes.set(node.id, { ...node, parent })
  for (const child of node.children) collect(child, node.id)
}
for (const node of graph.nodes) collect(node)

const states = [...nodes.values()].filter((n) => n.kind !== 'initial')
const leaves = states.filter((n) => n.kind === 'atomic' || n.kind === 'final')
const finals = new Set(leaves.filter((n) => n.kind === 'final').map((n) => n.id))
const notFinal = leaves.filter((n) => n.kind !== 'final').map((n) => n.id)

/** The state and its ancestors, innermost first. */
function lineage(id: string): string[] {
  const chain: string[] = []
  for (let at: string | undefined = id; at; at = nodes.get(at)?.parent) chain.push(at)
  return chain
}

/** The leaves below (or at) `id`. */
function leavesOf(id: string): string[] {
  return leaves.filter((leaf) => lineage(leaf.id).includes(id)).map((leaf) => leaf.id)
}

/** The leaf (or leaves, through a history state) that entering `target` by `kind` of edge leads to. */
function entered(target: string, kind: string): string[] {
  if (kind === 'history') return leavesOf(target)
  const node = nodes.get(target)!
  if (node.kind === 'atomic' || node.kind === 'final') return [target]
  const initial = graph.edges.find((e) => e.kind === 'initial' && e.source === `initial:${target}`)!
  return entered(initial.target, 'initial')
}

/** The edges a leaf can take: its own and its ancestors'. */
function edgesFrom(leaf: string) {
  const chain = lineage(leaf)
  return graph.edges.filter((e) => e.kind !== 'initial' && chain.includes(e.source))
}

const next = new Map(leaves.map((leaf) => [leaf.id, [...new Set(edgesFrom(leaf.id).flatMap((e) => entered(e.target, e.kind)))]]))

function reachableFrom(start: string[]): Set<string> {
  const seen = new Set(start)
  const queue = [...start]
  while (queue.length > 0) for (const to of next.get(queue.shift()!) ?? []) if (!seen.has(to)) (seen.add(to), queue.push(to))
  return seen
}

test('the walk has the chart: states, leaves, final states', () => {
  expect(states.length).toBeGreaterThan(10)
  expect([...finals].sort()).toEqual(['aborted', 'completed', 'failed'])
})

test('every state is reachable from idle', () => {
  const initial = graph.edges.find((e) => e.kind === 'initial' && e.source === 'initial:root')!
  const reached = reachableFrom(entered(initial.target, 'initial'))
  expect(initial.target).toBe('idle')
  const unreached = states.filter((state) => !leavesOf(state.id).some((leaf) => reached.has(leaf))).map((s) => s.id)
  expect(unreached).toEqual([])
})

test('from every state that is not final, a final state is reachable', () => {
  const stuck = notFinal.filter((leaf) => ![...reachableFrom([leaf])].some((to) => finals.has(to)))
  expect(stuck).toEqual([])
})

test('turn.abort takes every state that is not final to aborted (unguarded)', () => {
  const notAborted = notFinal.filter((leaf) => {
    // The innermost handler of turn.abort is the one taken.
    const handler = edgesFrom(leaf)
      .filter((e) => e.event === 'turn.abort')
      .sort((a, b) => lineage(leaf).indexOf(a.source) - lineage(leaf).indexOf(b.source))[0]
    return !handler || handler.guard !== null || entered(handler.target, handler.kind).join() !== 'aborted'
  })
  expect(notAborted).toEqual([])
})

/** The events a state can be sent from outside the chart (timers' events are the chart's own). */
const events = [...new Set(graph.edges.map((e) => e.event).filter((event) => event !== '' && !event.startsWith('xstate.')))].sort()

/** docs/chart.md's table: `| state | event, event |` rows under "## What each state ignores". */
function documentedIgnores(): Map<string, string[]> {
  const text = fs.readFileSync(path.join(__dirname, '../../docs/chart.md'), 'utf8')
  const section = text.split(/^## /m).find((s) => s.startsWith('What each state ignores'))
  if (!section) throw new Error('docs/chart.md has no "## What each state ignores" section')
  const rows = section.split('\n').filter((line) => /^\| `/.test(line))
  return new Map(
    rows.map((row) => {
      const [state, ignored] = row.split('|').slice(1, 3).map((cell) => cell.trim())
      return [state.replace(/`/g, ''), (ignored.match(/`[^`]+`/g) ?? []).map((e) => e.replace(/`/g, '')).sort()]
    }),
  )
}

test('every event a state ignores is one docs/chart.md says it ignores (and no other)', () => {
  const ignored = new Map(
    notFinal.map((leaf) => {
      const handled = new Set(edgesFrom(leaf).map((e) => e.event))
      return [leaf, events.filter((event) => !handled.has(event))]
    }),
  )
  expect(Object.fromEntries(documentedIgnores())).toEqual(Object.fromEntries(ignored))
})
