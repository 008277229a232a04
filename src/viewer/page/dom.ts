/** Building the page's DOM: elements with attributes and children, in HTML and in SVG. */

type Child = Node | string | number | null | undefined | false
type Attributes = Record<string, string | number | boolean | null | undefined>

function fill<T extends Element>(node: T, attributes: Attributes, children: Child[]): T {
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue
    node.setAttribute(name === 'className' ? 'class' : name, value === true ? '' : String(value))
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    node.append(child instanceof Node ? child : String(child))
  }
  return node
}

/** An HTML element: `el('a', { href: '#/', class: 'back' }, '← Sessions')`. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  return fill(document.createElement(tag), attributes, children)
}

/** An SVG element: `svg('rect', { x: 0, y: 0, width: 10, height: 10 })`. */
export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Attributes = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  return fill(document.createElementNS('http://www.w3.org/2000/svg', tag), attributes, children)
}

/** A value as short JSON (a tool's input or output), cut at `max` characters. */
export function short(value: unknown, max = 200): string {
  let text: string
  try {
    text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value)
  } catch {
    text = String(value)
  }
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}
