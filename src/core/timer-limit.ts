/**
 * The longest delay a Node timer can hold. `setTimeout`/`setInterval` treat anything larger
 * (2^31 ms, about 24.8 days, and up) as 1 ms: a lease of 2^32 ms would renew every
 * millisecond, a tool timeout of 2^31 ms would fire at once. Every option that becomes a
 * timer is refused above this.
 */
export const maxTimerMs = 2 ** 31 - 1
