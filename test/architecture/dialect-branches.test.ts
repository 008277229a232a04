/**
 * No dialect branch outside the backends' folders: what differs between SQLite, PostgreSQL and
 * the others is a member of a backend (src/store/backend.ts), and the engine, the CLI, the
 * viewer and the migrations ask for the capability, never for the backend's name or the URL's
 * scheme. A backend's folder holds its branches; the registry (store/backends/) holds none.
 */
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')
const backendFolders = ['sqlite', 'postgres', 'memory', 'foreign', 'node-sqlite'].map((name) => path.join('src', 'store', name) + path.sep)

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))
}

/** What a dialect branch looks like: a comparison with a backend's name, a URL scheme test, a class check of one backend's store, an adapter's name guessed. */
const branches: Array<[string, RegExp]> = [
  ['a comparison with a dialect name', /[!=]==?\s*['"](?:postgres|sqlite|memory|node:sqlite|pg)['"]|['"](?:postgres|sqlite|memory|node:sqlite)['"]\s*[!=]==?/],
  ['a branch on a dialect', /\bdialect\s*[!=]==?|\.dialect\s*\?/],
  ['a PostgreSQL URL test', /\bisPostgresUrl\b|\^postgres/],
  ['a class check of the memory store', /instanceof\s+MemoryStore\b/],
  ['a guess from an adapter name', /\/postgres\/i|\/sqlite\/i/],
]

const outside = files(path.join(root, 'src'))
  .map((file) => path.relative(root, file))
  .filter((file) => !backendFolders.some((folder) => file.startsWith(folder)))

test('the sources outside the backends were read', () => {
  expect(outside.length).toBeGreaterThan(150)
  expect(outside).toContain(path.join('src', 'engine', 'open-store.ts'))
})

test.each(branches)('no %s outside src/store/<backend>/', (_what, pattern) => {
  const found = outside.flatMap((file) =>
    fs
      .readFileSync(path.join(root, file), 'utf8')
      .split('\n')
      .flatMap((line, i) => (pattern.test(line) && !/^\s*(\*|\/\/)/.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
  )
  expect(found).toEqual([])
})

test('the pattern finds a branch where there is one (it can fail)', () => {
  expect(branches.filter(([, pattern]) => pattern.test("if (opened.dialect === 'postgres') listen()"))).toHaveLength(2)
  expect(branches.some(([, pattern]) => pattern.test('if (isPostgresUrl(database)) return'))).toBe(true)
  expect(branches.some(([, pattern]) => pattern.test('database instanceof MemoryStore'))).toBe(true)
})
