/**
 * The laid-out chart as the viewer's page draws it: boxes with absolute positions (a compound
 * state's box holds its children's), and edges as polylines with their label's box. Made
 * once, when the page is built (chart-layout.ts), and embedded in the page as JSON; shared by
 * the builder and the page's script, so it holds types and constants only.
 */

export interface DrawnBox {
  /** The state's key, or `initial:<parent>` for an initial marker. */
  id: string
  kind: 'atomic' | 'compound' | 'final' | 'initial'
  /** The box this one is drawn in; null at the top level. */
  parent: string | null
  x: number
  y: number
  width: number
  height: number
}

export interface DrawnEdgeMember {
  /** A chart edge's id (`chartGraph()`), as the turn's path names it. */
  id: string
  /** Its label: the event, then the guard (and a note for history). */
  lines: string[]
}

export interface DrawnEdge {
  /** `<source>-><target>`. */
  id: string
  source: string
  target: string
  /** The chart's edges between the same two boxes, drawn as one arrow with their labels stacked. */
  members: DrawnEdgeMember[]
  kind: 'transition' | 'initial' | 'history' | 'any-state'
  /** The polyline from the source's border to the target's (the arrowhead's tip). */
  points: Array<[number, number]>
  label: { x: number; y: number; width: number; height: number } | null
}

export interface ChartDrawing {
  width: number
  height: number
  /** Parents before their children. */
  boxes: DrawnBox[]
  edges: DrawnEdge[]
}

/**
 * The text metrics the layout reserves room with. The page draws in a monospace font at
 * these sizes; a font wider than reserved is squeezed to the room (`textLength`).
 */
export const drawingText = {
  /** A state's name. */
  name: { size: 12, charWidth: 7.6, lineHeight: 16 },
  /** A state's visits, under its name. */
  info: { size: 10, charWidth: 6.2, lineHeight: 13 },
  /** An edge's label. */
  label: { size: 11, charWidth: 6.8, lineHeight: 13 },
} as const

/** The room of a state's box: its name, then one line of visits. */
export const stateBox = { minWidth: 156, paddingX: 10, height: 42, nameBaseline: 16, infoBaseline: 32 } as const

/** A compound state's box: its name at the top left, its children below it. */
export const compoundBox = { paddingTop: 28, padding: 12, nameBaseline: 18 } as const
