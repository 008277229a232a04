// Summarises a .cpuprofile: self time by package / file and the top functions.
import fs from 'node:fs'
const profile = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))
const top = Number(process.argv[3] ?? 25)
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map()
const dt = profile.timeDeltas
for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0))
const total = [...self.values()].reduce((a, b) => a + b, 0)
const where = (url) => {
  if (!url) return '(native/gc/idle)'
  const m = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)
  if (m) return m[m.length - 1].replace('node_modules/', '')
  if (url.includes('/dist/cjs/')) return 'turnchart ' + url.split('/dist/cjs/')[1]
  if (url.startsWith('node:')) return url
  return url.split('/').slice(-2).join('/')
}
const pkg = new Map(), fn = new Map()
for (const [id, us] of self) {
  const n = byId.get(id)
  const cf = n.callFrame
  const k = cf.url ? where(cf.url) : cf.functionName || '(root)'
  pkg.set(k, (pkg.get(k) ?? 0) + us)
  const f = `${cf.functionName || '(anonymous)'} ${where(cf.url)}:${cf.lineNumber + 1}`
  fn.set(f, (fn.get(f) ?? 0) + us)
}
const show = (title, map) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms sampled)`)
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(us / 1000).toFixed(1).padStart(9)} ms ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`)
}
show('self time by package / file', pkg)
show('self time by function', fn)
// inclusive time of selected functions
const children = new Map(profile.nodes.map((n) => [n.id, n.children ?? []]))
const incl = (id) => (self.get(id) ?? 0) + children.get(id).reduce((a, c) => a + incl(c), 0)
const inclusive = new Map()
const walk = (id, stack) => {
  const n = byId.get(id)
  const name = `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}`
  if (!stack.has(name)) {
    inclusive.set(name, (inclusive.get(name) ?? 0) + (self.get(id) ?? 0) + 0)
  }
  const next = new Set(stack); next.add(name)
  for (const c of children.get(id)) walk(c, next)
}
// inclusive: sum self of all descendants, counted once per name per stack
const inc = new Map()
const walk2 = (id, names) => {
  const n = byId.get(id)
  const name = `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}`
  const set = names.has(name) ? names : new Set(names).add(name)
  const s = self.get(id) ?? 0
  if (s) for (const x of set) inc.set(x, (inc.get(x) ?? 0) + s)
  for (const c of children.get(id)) walk2(c, set)
}
walk2(profile.nodes[0].id, new Set())
show('inclusive time by function', inc)
