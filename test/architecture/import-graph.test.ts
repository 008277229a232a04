/**
 * The import graph of every file of src/ and machines/, with no exemption: a dependency points
 * down. Each folder has a layer; a file imports only its own folder and folders of lower
 * layers (type-only imports included), so no two folders import each other, directly or
 * around a loop; nor do two folders at any depth (store/ and store/sqlite/, core/ and
 * core/errors/); no two files do either; and only index.ts sits at src/'s root.
 */
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')

/**
 * The layers, lowest first. A new folder must be placed here (the test names it when it is
 * not). `engine` is the composition root: it may import every layer below it; the web edge,
 * the viewer, the CLI and the test helpers sit above it because they take an engine.
 */
const layers: string[][] = [
  ['core'],
  ['machines', 'policy', 'telemetry', 'store'],
  ['chart', 'tools'],
  ['llm'],
  ['compaction'],
  ['config'],
  ['turn'],
  // ui-stream maps a turn's events to the AI SDK's UI chunks: above turn/, which knows nothing of it.
  ['control', 'conversation', 'schedule', 'ui-stream'],
  ['engine'],
  // The hosting seam: an engine run by a host of turns (turnchart/host); Restate is one such host.
  ['host'],
  ['ui', 'viewer', 'testing', 'restate'],
  ['cli'],
]
const layerOf = new Map(layers.flatMap((names, rank) => names.map((name) => [name, rank] as const)))

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))
}

const sources = [...files(path.join(root, 'src')), ...files(path.join(root, 'machines'))]

/** The folder of a file: `machines`, a folder of src/, or '.' for a file at the root of src/. */
function folderOf(file: string): string {
  const rel = path.relative(root, file).split(path.sep)
  if (rel[0] === 'machines') return 'machines'
  return rel.length > 2 ? rel[1] : '.'
}

function resolveImport(from: string, specifier: string): string {
  const base = path.resolve(path.dirname(from), specifier)
  for (const candidate of [base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate
  }
  return base
}

const imports = sources.flatMap((file) => {
  const text = fs.readFileSync(file, 'utf8')
  return [...text.matchAll(/(?:from|import\(|require\()\s*['"](\.[^'"]+)['"]/g)].map((m) => {
    const target = resolveImport(file, m[1])
    return { file: path.relative(root, file), target: path.relative(root, target), from: folderOf(file), to: folderOf(target) }
  })
})

/** The strongly connected components of two or more nodes of a graph (Tarjan): its cycles. */
function cyclesOf(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  let counter = 0
  const visit = (node: string) => {
    index.set(node, counter)
    low.set(node, counter++)
    stack.push(node)
    onStack.add(node)
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!))
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1) cycles.push(component.sort())
    }
  }
  for (const node of edges.keys()) if (!index.has(node)) visit(node)
  return cycles
}

test('only index.ts sits at the root of src/', () => {
  const atRoot = fs.readdirSync(path.join(root, 'src'), { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name)
  expect(atRoot).toEqual(['index.ts'])
})

test('every folder of src/ (and machines/) has a layer', () => {
  expect(imports.length).toBeGreaterThan(300) // the graph was read
  const folders = new Set(sources.map(folderOf).filter((f) => f !== '.'))
  expect([...folders].filter((f) => !layerOf.has(f))).toEqual([])
})

test('a file imports only its own folder and lower layers (type-only imports included)', () => {
  const upward = imports.filter((i) => i.from !== '.' && i.from !== i.to && (layerOf.get(i.to) ?? Infinity) >= (layerOf.get(i.from) ?? -1))
  expect(upward.map((i) => `${i.file} → ${i.target}`)).toEqual([])
})

test('no import cycle between files (type-only imports included)', () => {
  const edges = new Map<string, string[]>()
  for (const i of imports) edges.set(i.file, [...(edges.get(i.file) ?? []), i.target])
  expect(cyclesOf(edges)).toEqual([])
})

test('no import cycle between folders at any depth (type-only imports included)', () => {
  // Each file's own folder (src/store/sqlite, not src/store): a nested folder and its parent are two nodes.
  const edges = new Map<string, string[]>()
  for (const i of imports) {
    const from = path.dirname(i.file)
    const to = path.dirname(i.target)
    if (from !== to) edges.set(from, [...(edges.get(from) ?? []), to])
  }
  expect(edges.size).toBeGreaterThan(20) // nested folders were read
  expect(cyclesOf(edges)).toEqual([])
  // It can fail: two folders importing each other are a cycle.
  expect(cyclesOf(new Map([['src/a', ['src/a/b']], ['src/a/b', ['src/a']]]))).toEqual([['src/a', 'src/a/b']])
})

test("a tool part's state is assigned in one module (src/tools/tool-part.ts)", () => {
  const assigning = sources.filter((file) => /\bpart\.state\s*=[^=]/.test(fs.readFileSync(file, 'utf8'))).map((file) => path.relative(root, file))
  expect(assigning).toEqual([path.join('src', 'tools', 'tool-part.ts')])
})

test('the store writes and never publishes: nothing in store/ imports the bus', () => {
  expect(imports.filter((i) => i.from === 'store' && i.target.endsWith(path.join('core', 'bus.ts'))).map((i) => i.file)).toEqual([])
})

test('turn/ imports nothing of ui-stream/: the UI message stream is a transform above the turn', () => {
  expect(imports.filter((i) => i.from === 'turn' && i.to === 'ui-stream').map((i) => `${i.file} → ${i.target}`)).toEqual([])
  expect(layerOf.get('ui-stream')!).toBeGreaterThan(layerOf.get('turn')!)
})
