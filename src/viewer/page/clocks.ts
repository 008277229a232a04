/**
 * Text that changes with time alone (a retry countdown, how long a running turn has been in
 * its state): each registered update runs every 100 ms while its element is in the page. The
 * server pushes changes to the data; the passing of time is the page's own.
 */

interface Clock {
  node: Element
  update: () => void
  /** The element was in the page once: when it leaves, its clock stops. */
  shown: boolean
}

const clocks = new Set<Clock>()
let timer: number | undefined

function tick() {
  for (const clock of clocks) {
    if (clock.node.isConnected) {
      clock.shown = true
      clock.update()
    } else if (clock.shown) clocks.delete(clock)
  }
  if (clocks.size === 0 && timer !== undefined) {
    clearInterval(timer)
    timer = undefined
  }
}

/** Runs `update` now and every 100 ms while `node` is in the page. */
export function everyTick(node: Element, update: () => void): void {
  update()
  clocks.add({ node, update, shown: false })
  if (timer === undefined) timer = window.setInterval(tick, 100)
}
