/** Times as the page writes them. */

/** A duration: `840 ms`, `2.4 s`, `3 min 05 s`, `2 h 10 min`. */
export function duration(ms: number): string {
  const value = Math.max(0, ms)
  if (value < 1000) return `${Math.round(value)} ms`
  if (value < 60_000) return `${(value / 1000).toFixed(value < 10_000 ? 2 : 1)} s`
  const minutes = Math.floor(value / 60_000)
  if (minutes < 60) return `${minutes} min ${String(Math.floor((value % 60_000) / 1000)).padStart(2, '0')} s`
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`
}

/** A moment within a turn, from its start: `+0 ms`, `+1.52 s`. */
export function offset(ms: number): string {
  return `+${duration(ms)}`
}

/** A wall-clock time, local and to the second: `2026-12-01 14:03:27`. */
export function clock(epochMs: number): string {
  const d = new Date(epochMs)
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}
