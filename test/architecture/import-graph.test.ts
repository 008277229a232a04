/**
 * The import graph: a dependency points down. Modules below the turn runner (the model call,
 * tools, compaction, the store, the pure policies, …) never import the runner or what sits
 * above it, and no two folders of src/ import each other, directly or around a loop.
 */
import fs from 'node:fs'
import path from 'node:path'

const src = path.resolve(__dirname, '../../src')

/** Folders above the turn runner: they start and watch turns. */
const above = new Set(['conversation', 'ui', 'cli', 'views', 'viewer', 'control'])
/** Folders below it: what a turn's actors use. */
const below = ['llm', 'tools', 'compaction', 'store', 'policy', 'prompt', 'telemetry', 'security', 'chart', 'testing']

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))
}

/** The folder of src/ a file is in; '.' for files at the root of src/. */
const folderOf = (file: string) => {
  const rel = path.relative(src, file)
  return rel.includes(path.sep) ? rel.split(path.sep)[0] : '.'
}

const imports = files(src).flatMap((file) => {
  const text = fs.readFileSync(file, 'utf8')
  return [...text.matchAll(/(?:from|import\()\s*['"](\.[^'"]+)['"]/g)].map((m) => ({
    file: path.relative(src, file),
    from: folderOf(file),
    to: folderOf(path.resolve(path.dirname(file), m[1])),
    target: path.relative(src, path.resolve(path.dirname(file), m[1])),
  }))
})

test('no module below the turn runner imports turn/ or a folder above it', () => {
  expect(imports.length).toBeGreaterThan(100) // the graph was read
  const upward = imports.filter((i) => below.includes(i.from) && (i.to === 'turn' || above.has(i.to) || i.target === 'engine'))
  expect(upward.map((i) => `${i.file} → ${i.target}`)).toEqual([])
})

test('no cycle between the folders of src/', () => {
  const edges = new Map<string, Set<string>>()
  for (const i of imports) {
    if (i.from === '.' || i.to === '.' || i.to.startsWith('..') || i.from === i.to) continue
    if (!edges.has(i.from)) edges.set(i.from, new Set())
    edges.get(i.from)!.add(i.to)
  }
  const cycles: string[] = []
  const visit = (node: string, trail: string[]) => {
    for (const next of edges.get(node) ?? []) {
      if (next === trail[0]) cycles.push([...trail, next].join(' → '))
      else if (!trail.includes(next) && next > trail[0]) visit(next, [...trail, next])
    }
  }
  for (const start of edges.keys()) visit(start, [start])
  expect(cycles).toEqual([])
})

test("a tool part's state is assigned in one module (src/tools/tool-part.ts)", () => {
  const assigning = files(src).filter((file) => /\bpart\.state\s*=[^=]/.test(fs.readFileSync(file, 'utf8'))).map((file) => path.relative(src, file))
  expect(assigning).toEqual([path.join('tools', 'tool-part.ts')])
})

test('the store writes and never publishes: nothing in store/ imports the bus', () => {
  expect(imports.filter((i) => i.from === 'store' && i.target === 'bus').map((i) => i.file)).toEqual([])
})
