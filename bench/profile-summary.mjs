// Summarises a V8 .cpuprofile (node --cpu-prof): self time by category (turnchart's src folders,
// the libraries, web streams, undici/net, GC, ...), optionally only the samples inside a time
// window (CLOCK_MONOTONIC µs, the clock of process.hrtime and of the profile's timestamps), so
// start-up and warm-up are left out.
//   node bench/profile-summary.mjs <file.cpuprofile> [top]   (CLI: categories and top functions)
// run.mjs imports summarizeProfile for the profile tables of docs/benchmarks.md.
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'

/** Categories in the order the tables list them (turnchart's folders come first, then these). */
export const CATEGORY_ORDER = [
  'xstate',
  'kysely',
  'better-sqlite3',
  'AI SDK provider (@ai-sdk/*, eventsource-parser)',
  'zod',
  'ai (AI SDK core)',
  'web streams',
  'undici / net',
  'promises (microtask queue)',
  'timers',
  'GC',
  'V8 (program)',
  'other Node internals',
  'module loading',
  'bench harness',
  'other packages',
  'other',
]
const TURNCHART = 'turnchart src/'

/**
 * The category of a profile node's call frame, or undefined for a native frame without a URL
 * (its time belongs to the caller: better-sqlite3's `run`, a socket's `writev`, `structuredClone`).
 */
export function categoryOf({ functionName, url }) {
  if (functionName === '(garbage collector)') return 'GC'
  if (functionName === '(idle)') return 'idle'
  if (functionName === '(program)') return 'V8 (program)'
  if (functionName === '(root)') return 'other'
  if (functionName === 'runMicrotasks' && !url) return 'promises (microtask queue)'
  if (!url) return undefined
  const own = url.match(/\/dist\/cjs\/src\/([^/]+)(\/)?/)
  if (own) return TURNCHART + (own[2] ? own[1] : own[1].replace(/\.js$/, ''))
  const packages = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)
  if (packages) {
    const name = packages[packages.length - 1].replace('node_modules/', '')
    // The native statement calls (better-sqlite3's run/all/get) have no frame of their own: V8
    // books them to their JS caller, which is Kysely's SQLite driver.
    if (name === 'kysely' && functionName === 'executeQuery' && url.includes('dialect/sqlite/')) return 'better-sqlite3'
    if (name === 'xstate' || name === 'kysely' || name === 'better-sqlite3' || name === 'zod') return name
    if (name.startsWith('@ai-sdk/') || name === 'eventsource-parser') return 'AI SDK provider (@ai-sdk/*, eventsource-parser)'
    if (name === 'ai') return 'ai (AI SDK core)'
    return 'other packages'
  }
  // js_transferable: every web stream is made transferable when constructed
  if (url.startsWith('node:internal/webstreams/') || url === 'node:internal/worker/js_transferable') return 'web streams'
  if (url === 'node:timers' || url === 'node:internal/timers') return 'timers'
  if (url.startsWith('wasm://') || /^node:(internal\/deps\/undici|net|_http|internal\/stream_base_commons|internal\/streams\/|internal\/net|dns|internal\/dns)/.test(url)) return 'undici / net'
  if (url === 'node:internal/process/task_queues') return 'promises (microtask queue)'
  if (/^node:internal\/(modules|bootstrap|main)/.test(url)) return 'module loading'
  if (url.startsWith('node:')) return 'other Node internals'
  if (url.includes('/bench/')) return 'bench harness'
  return 'other'
}

/**
 * Self time per category (µs) and per function, of the samples in `window` ([from, to] µs) or
 * of all samples. Idle time is counted apart; `busyUs` is everything else.
 */
export function summarizeProfile(profile, { window } = {}) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const categoryCache = new Map()
  const category = (id) => {
    if (categoryCache.has(id)) return categoryCache.get(id)
    const n = byId.get(id)
    const c = categoryOf(n.callFrame) ?? (parent.has(id) ? category(parent.get(id)) : 'other')
    categoryCache.set(id, c)
    return c
  }
  const self = new Map() // node id -> µs
  let t = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0
    t += dt
    if (window && (t < window[0] || t > window[1])) continue
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt)
  }
  const categories = new Map()
  const functions = new Map()
  let idleUs = 0
  let busyUs = 0
  for (const [id, us] of self) {
    const c = category(id)
    if (c === 'idle') {
      idleUs += us
      continue
    }
    busyUs += us
    categories.set(c, (categories.get(c) ?? 0) + us)
    const { functionName, url, lineNumber } = byId.get(id).callFrame
    const where = url ? `${url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\/cjs\/src\//, 'src/').replace(/^file:\/\/.*\/bench\//, 'bench/')}:${lineNumber + 1}` : '(native)'
    const name = functionName || '(anonymous)'
    const key = `${name} ${where}`
    const f = functions.get(key) ?? { name, where, category: c, us: 0 }
    f.us += us
    functions.set(key, f)
  }
  return { busyUs, idleUs, categories: Object.fromEntries(categories), functions: [...functions.values()].sort((a, b) => b.us - a.us) }
}

/** Category names in table order: turnchart's folders by time, then CATEGORY_ORDER. */
export function orderedCategories(...summaries) {
  const names = new Set(summaries.flatMap((s) => Object.keys(s.categories)))
  const total = (name) => summaries.reduce((sum, s) => sum + (s.categories[name] ?? 0), 0)
  const own = [...names].filter((n) => n.startsWith(TURNCHART)).sort((a, b) => total(b) - total(a))
  return [...own, ...CATEGORY_ORDER.filter((n) => names.has(n))]
}
export const isTurnchart = (category) => category.startsWith(TURNCHART)

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const summary = summarizeProfile(JSON.parse(fs.readFileSync(process.argv[2], 'utf8')))
  const top = Number(process.argv[3] ?? 25)
  const line = (us, label) => console.log(`${(us / 1000).toFixed(1).padStart(9)} ms ${((100 * us) / summary.busyUs).toFixed(1).padStart(5)}%  ${label}`)
  console.log(`busy ${(summary.busyUs / 1000).toFixed(0)} ms, idle ${(summary.idleUs / 1000).toFixed(0)} ms\n\nself time by category`)
  for (const name of orderedCategories(summary)) line(summary.categories[name], name)
  console.log('\nself time by function')
  for (const f of summary.functions.slice(0, top)) line(f.us, `${f.name} ${f.where}  [${f.category}]`)
}
