/**
 * Lays the chart out with ELK's layered algorithm (elkjs), once, when the viewer's page is
 * built: the chart only changes with the machine, so every turn is drawn on the same picture
 * and the page ships its coordinates instead of a 1.6 MB layout engine. Why layered: a turn
 * flows one way (idle, the work, an end) with a few edges back (retries, the next step);
 * layered layout ranks the states along that flow, keeps edges short and pointing one way,
 * routes them orthogonally around boxes, places their labels as obstacles, and lays out
 * compound states with their children inside (`hierarchyHandling: INCLUDE_CHILDREN`), edges
 * crossing their borders included. That is what Stately's own tools use for statecharts.
 */
import type { ChartGraph, ChartGraphEdge, ChartGraphNode } from '../chart/chart-graph'
import { compoundBox, drawingText, stateBox, type ChartDrawing, type DrawnBox, type DrawnEdge } from './chart-drawing'

/** The part of elkjs's API used here (its JSON graph), so this module does not load elkjs. */
export interface ElkLike {
  layout(graph: ElkGraphNode): Promise<ElkGraphNode>
}
interface ElkShape {
  x?: number
  y?: number
  width?: number
  height?: number
}
interface ElkGraphNode extends ElkShape {
  id: string
  layoutOptions?: Record<string, string>
  labels?: Array<ElkShape & { text?: string }>
  children?: ElkGraphNode[]
  edges?: ElkGraphEdge[]
}
interface ElkGraphEdge {
  id: string
  sources: string[]
  targets: string[]
  labels?: Array<ElkShape & { text?: string }>
  sections?: Array<{ startPoint: { x: number; y: number }; endPoint: { x: number; y: number }; bendPoints?: Array<{ x: number; y: number }> }>
}

const layoutOptions: Record<string, string> = {
  'elk.algorithm': 'layered',
  // Top to bottom: a page scrolls down, so the chart's long side goes down too.
  'elk.direction': 'DOWN',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.edgeLabels.placement': 'CENTER',
  // Keep the order the chart is written in where the layout has a free choice.
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
  'elk.layered.spacing.nodeNodeBetweenLayers': '24',
  'elk.layered.spacing.edgeNodeBetweenLayers': '10',
  'elk.layered.spacing.edgeEdgeBetweenLayers': '7',
  'elk.spacing.nodeNode': '18',
  'elk.spacing.edgeNode': '12',
  'elk.spacing.edgeEdge': '7',
  'elk.spacing.edgeLabel': '3',
  'elk.padding': '[top=8,left=8,bottom=8,right=8]',
  // Every coordinate relative to the drawing's origin, so the page needs no transforms.
  'elk.json.shapeCoords': 'ROOT',
  'elk.json.edgeCoords': 'ROOT',
}

const textWidth = (text: string, metrics: { charWidth: number }) => text.length * metrics.charWidth

function elkNode(node: ChartGraphNode): ElkGraphNode {
  if (node.kind === 'initial') return { id: node.id, width: 12, height: 12 }
  if (node.kind === 'compound') {
    const { paddingTop, padding } = compoundBox
    return {
      id: node.id,
      // The name sits in the padding at the top left; its width keeps the box at least that wide.
      labels: [{ text: node.id, width: textWidth(node.id, drawingText.name), height: drawingText.name.lineHeight }],
      layoutOptions: {
        'elk.padding': `[top=${paddingTop},left=${padding},bottom=${padding},right=${padding}]`,
        'elk.nodeLabels.placement': 'INSIDE V_TOP H_LEFT',
        'elk.nodeSize.constraints': 'NODE_LABELS',
      },
      children: node.children.map(elkNode),
    }
  }
  const width = Math.max(stateBox.minWidth, Math.ceil(textWidth(node.id, drawingText.name)) + 2 * stateBox.paddingX)
  return { id: node.id, width, height: stateBox.height }
}

/** The chart's edges between the same two boxes, grouped: one arrow each, labels stacked. */
function groupEdges(edges: ChartGraphEdge[]): Array<Omit<DrawnEdge, 'points' | 'label'>> {
  const groups = new Map<string, Omit<DrawnEdge, 'points' | 'label'>>()
  for (const edge of edges) {
    const id = `${edge.source}->${edge.target}`
    const group = groups.get(id) ?? { id, source: edge.source, target: edge.target, members: [], kind: edge.kind }
    // `turn.abort` leaves every top-level state: the arrows from each say it without a note.
    group.members.push({ id: edge.id, lines: edge.label.filter((line) => line !== '(any state)') })
    groups.set(id, group)
  }
  return [...groups.values()]
}

/**
 * @example
 * const ELK = require('elkjs/lib/elk.bundled.js')
 * const drawing = await layoutChart(chartGraph(), new ELK())
 */
export async function layoutChart(graph: ChartGraph, elk: ElkLike): Promise<ChartDrawing> {
  const grouped = groupEdges(graph.edges)
  const { charWidth, lineHeight } = drawingText.label
  const input: ElkGraphNode = {
    id: 'root',
    layoutOptions,
    children: graph.nodes.map(elkNode),
    edges: grouped.map((edge) => {
      const lines = edge.members.flatMap((m) => m.lines)
      const labels = lines.length ? [{ text: lines.join('\n'), width: Math.ceil(Math.max(...lines.map((l) => l.length)) * charWidth) + 8, height: lines.length * lineHeight + 4 }] : []
      return { id: edge.id, sources: [edge.source], targets: [edge.target], labels }
    }),
  }
  const out = await elk.layout(input)
  const boxes: DrawnBox[] = []
  const kinds = new Map<string, ChartGraphNode['kind']>()
  const index = (nodes: ChartGraphNode[]) => nodes.forEach((n) => (kinds.set(n.id, n.kind), index(n.children)))
  index(graph.nodes)
  const collect = (node: ElkGraphNode, parent: string | null) => {
    for (const child of node.children ?? []) {
      boxes.push({ id: child.id, kind: kinds.get(child.id) ?? 'atomic', parent, x: round(child.x), y: round(child.y), width: round(child.width), height: round(child.height) })
      collect(child, child.id)
    }
  }
  collect(out, null)
  const laid = new Map<string, ElkGraphEdge>()
  const gather = (node: ElkGraphNode) => {
    for (const edge of node.edges ?? []) laid.set(edge.id, edge)
    for (const child of node.children ?? []) gather(child)
  }
  gather(out)
  const edges: DrawnEdge[] = grouped.map((edge) => {
    const result = laid.get(edge.id)
    const section = result?.sections?.[0]
    if (!section) throw new Error(`the layout did not route the edge ${edge.id}`)
    const points = [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].map((p): [number, number] => [round(p.x), round(p.y)])
    const label = result.labels?.[0]
    return { ...edge, points, label: label ? { x: round(label.x), y: round(label.y), width: round(label.width), height: round(label.height) } : null }
  })
  return { width: round(out.width), height: round(out.height), boxes, edges }
}

const round = (value: number | undefined) => Math.round((value ?? 0) * 10) / 10
