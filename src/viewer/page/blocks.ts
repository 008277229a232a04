/**
 * Live updates without losing the reader's place: a view is a list of keyed blocks, and an
 * update replaces only the blocks whose content changed (a running turn), so the others keep
 * their DOM, their focus, an opened chart, a zoom.
 */

export interface Block {
  key: string
  /** Changes exactly when the block's content does (its data as JSON). */
  signature: string
  build(): HTMLElement
}

/**
 * Makes `container`'s children the blocks' elements, in order; returns the elements built anew.
 * `carry` moves what the reader changed (an opened chart, a zoom) from a replaced element to
 * its successor.
 */
export function reconcile(container: HTMLElement, blocks: Block[], carry: (from: HTMLElement, to: HTMLElement) => void): HTMLElement[] {
  const existing = new Map<string, HTMLElement>()
  for (const child of Array.from(container.children)) {
    if (child instanceof HTMLElement && child.dataset.key) existing.set(child.dataset.key, child)
  }
  const focused = document.activeElement
  const built: HTMLElement[] = []
  let refocus: HTMLElement | undefined
  const wanted = blocks.map((block) => {
    const old = existing.get(block.key)
    existing.delete(block.key)
    if (old && old.dataset.signature === block.signature) return old
    const node = block.build()
    node.dataset.key = block.key
    node.dataset.signature = block.signature
    if (old) {
      carry(old, node)
      if (focused && old.contains(focused)) refocus = node
    }
    built.push(node)
    return node
  })
  for (const stale of existing.values()) stale.remove()
  // Insert or move only what is out of place: an element that stays is never detached.
  let cursor = container.firstElementChild
  for (const node of wanted) {
    if (node === cursor) cursor = node.nextElementSibling
    else container.insertBefore(node, cursor)
  }
  for (let extra = cursor; extra; ) {
    const next = extra.nextElementSibling
    if (!wanted.includes(extra as HTMLElement)) extra.remove()
    extra = next
  }
  if (refocus) refocus.focus({ preventScroll: true })
  return built
}
