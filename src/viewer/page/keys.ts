/**
 * Keyboard navigation: j / k the next and previous session, n / p the next and previous turn
 * of the open session, u (or Escape) back to the list, ? the list of keys; the arrow keys move
 * between the sessions of the list (Enter opens one). Links and buttons are reachable with Tab
 * as everywhere.
 */

export interface KeyActions {
  session(step: 1 | -1): void
  turn(step: 1 | -1): void
  back(): void
  help(): void
}

/** Keys typed into a field, or with a modifier, are not ours. */
function ignored(event: KeyboardEvent): boolean {
  if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return true
  const target = event.target as HTMLElement | null
  return !!target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))
}

/** Moves the focus to the next or previous link of the session list, when the focus is in it. */
function moveInList(event: KeyboardEvent, step: 1 | -1): boolean {
  const links = Array.from(document.querySelectorAll<HTMLAnchorElement>('nav.sessions a[data-session]'))
  const at = links.indexOf(document.activeElement as HTMLAnchorElement)
  if (at < 0) return false
  links[Math.min(links.length - 1, Math.max(0, at + step))]?.focus()
  event.preventDefault()
  return true
}

export function installKeys(actions: KeyActions): void {
  document.addEventListener('keydown', (event) => {
    if (ignored(event)) return
    const act = (fn: () => void) => {
      event.preventDefault()
      fn()
    }
    switch (event.key) {
      case 'ArrowDown':
        return void moveInList(event, 1)
      case 'ArrowUp':
        return void moveInList(event, -1)
      case 'j':
        return act(() => actions.session(1))
      case 'k':
        return act(() => actions.session(-1))
      case 'n':
        return act(() => actions.turn(1))
      case 'p':
        return act(() => actions.turn(-1))
      case 'u':
      case 'Escape':
        return act(() => actions.back())
      case '?':
        return act(() => actions.help())
    }
  })
}
