/**
 * README.md and docs/*.md cite only files that exist: every path-like reference (`src/…`,
 * `test/…`, `docs/…`, `machines/…`, `scripts/…`, `bench/…`, and Markdown links) resolves from
 * the repository root or from the citing file's folder.
 */
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')
const documents = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

/** Paths cited in `text`: file names with an extension under a known folder, and relative Markdown links. */
export function citedPaths(text: string): string[] {
  const found = new Set<string>()
  const pathLike = /(?<![\w/.-])((?:\.\.?\/)*(?:[\w.-]+\/)*(?:src|test|docs|machines|scripts|bench|spec|support)\/[\w./-]*\w\.(?:ts|md|mjs|cjs|js|json))\b/g
  for (const match of text.matchAll(pathLike)) found.add(match[1])
  for (const match of text.matchAll(/\]\(((?!https?:|#|mailto:)[^)\s#]+)(?:#[^)]*)?\)/g)) found.add(match[1])
  return [...found]
}

test.each(documents)('%s cites only files that exist', (document) => {
  const text = fs.readFileSync(path.join(root, document), 'utf8')
  const missing = citedPaths(text).filter(
    (cited) => !fs.existsSync(path.join(root, cited)) && !fs.existsSync(path.join(root, path.dirname(document), cited)),
  )
  expect(missing).toEqual([])
})

test('the pattern finds the paths it must', () => {
  expect(citedPaths('see `src/policy/retry-delay.ts` and [x](docs/chart.md), *(test/scenarios/api.test.ts)*, shared/spec/turn-behaviour.md, support/walk.ts').sort()).toEqual(
    ['docs/chart.md', 'shared/spec/turn-behaviour.md', 'src/policy/retry-delay.ts', 'support/walk.ts', 'test/scenarios/api.test.ts'].sort(),
  )
})
