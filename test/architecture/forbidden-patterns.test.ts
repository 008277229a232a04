/**
 * Patterns the code of src/ may hold only where it says, each with its reason: one writer of a
 * turn's progress, no overridden framework method. A rule is a pattern, the files allowed to
 * hold it (none: nowhere) and why; add a rule to the list to forbid something new. Comments are
 * read too (a rule's pattern is code-shaped: a call, not a word).
 */
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')

interface Rule {
  /** What a reader calls it (the test's name). */
  name: string
  pattern: RegExp
  /** Files (relative to the repository) that may hold it; folders end with '/'. */
  allowed: string[]
  reason: string
}

/**
 * The turn log: the one module that writes a turn's progress (src/turn/turn-log/); and the
 * store contract's conformance suite (turnchart/testing), which calls each method of the
 * contract itself to check a store.
 */
const turnLog = ['src/turn/turn-log/', 'src/testing/store-conformance/']
/** The store's own modules implement the calls (src/store/ is not read). */
const notRead = ['src/store/']

const rules: Rule[] = [
  {
    name: 'turns.update',
    pattern: /\.turns\.update\(/,
    allowed: turnLog,
    reason: "a turn's state moves only with its log row, written by the turn log (recovery's rows too)",
  },
  {
    name: 'transitions.append',
    pattern: /\.transitions\.append\(/,
    allowed: turnLog,
    reason: 'a log row is appended only with its turn row, in one transaction, by the turn log',
  },
  {
    name: 'Object.create over the chart',
    pattern: /Object\.create\(\s*(machine|turnMachine|turnChart|logic|chart)\b/,
    allowed: [],
    reason: "the turn log hears transitions through XState's inspection API, not an overridden `transition`",
  },
]

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))
}

const sources = [...files(path.join(root, 'src')), ...files(path.join(root, 'machines'))]
  .map((file) => path.relative(root, file).split(path.sep).join('/'))
  .filter((file) => !notRead.some((folder) => file.startsWith(folder)))
  .map((file) => ({ file, lines: fs.readFileSync(path.join(root, file), 'utf8').split('\n') }))

const isAllowed = (file: string, allowed: string[]) => allowed.some((a) => (a.endsWith('/') ? file.startsWith(a) : file === a))

test('the sources were read', () => {
  expect(sources.length).toBeGreaterThan(150)
  expect(sources.some((s) => s.file === 'src/turn/turn-log/log-rows.ts')).toBe(true)
})

describe.each(rules)('$name', (rule) => {
  test(`only where allowed: ${rule.reason}`, () => {
    const found = sources.flatMap(({ file, lines }) => lines.flatMap((line, i) => (rule.pattern.test(line) && !isAllowed(file, rule.allowed) ? [`${file}:${i + 1}: ${line.trim()}`] : [])))
    expect(found).toEqual([])
  })
})

test('each rule finds what it forbids (the patterns are not dead)', () => {
  const samples: Record<string, string> = {
    'turns.update': 'await tx.turns.update(id, update, now, fence)',
    'transitions.append': 'await tx.transitions.append(row)',
    'Object.create over the chart': 'const logic = Object.create(machine) as TurnMachine',
  }
  for (const rule of rules) expect([rule.name, rule.pattern.test(samples[rule.name] ?? '')]).toEqual([rule.name, true])
})
