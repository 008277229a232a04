/**
 * The chart's states are read from the chart (issues 50 and 70).
 *
 * Waiting states as data (issue 50): what a waiting state means (what settles it, whether it
 * parks, how a UI stream ends there, what the viewer says) is said once, on the state in the
 * chart (`meta.wait`), and the rest of the code reads it through `waitOf(state)`. So no module
 * outside machines/ names a particular waiting state: not by a string literal (types included),
 * not by a constant imported from machines/ that holds one (a name, or a list of names such as
 * the `parkableStates` this replaced). Excepted: the store contract's conformance fixtures,
 * which store rows in such states to check a store (src/testing/store-conformance/). Read with
 * TypeScript's parser: comments and docs may name states freely.
 *
 * Every other state too (issue 70): the final states, the crash's state, the retry waits, the
 * state of each actor's work are read from the chart (`isFinalState`, `crashedState`,
 * `retryWaitStates`, `stepStreamState`…, derived from its structure in machines/), never
 * written as a string. Excepted, the names the chart shares with another vocabulary: the
 * outcomes (`completed`, `failed`, `aborted`: a public type, each the final state of its name),
 * the session statuses (`idle`, `running`), a part's type (`step`), an option (`compaction`), a
 * history node's type (`history`), a step's finish reason (`reason: 'interrupted'`), and the
 * kind of `engine.waiting()`'s entry for a throttled turn (`kind: 'throttled'`, a public name).
 */
import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { turnMachine, waitingStates } from '../../machines/turn.machine'

const root = path.resolve(__dirname, '../..')
const excepted = ['src/testing/store-conformance/']
const waitingNames = new Set(waitingStates().keys())
type Node = { key: string; states: Record<string, Node> }
const allKeys = (node: Node): string[] => [node.key, ...Object.values(node.states).flatMap(allKeys)]
const sharedNames = new Set(['completed', 'failed', 'aborted', 'idle', 'running', 'step', 'compaction', 'history'])
const stateNames = new Set(allKeys(turnMachine.root as unknown as Node).slice(1).filter((name) => !sharedNames.has(name)))

/** The property a literal is the value (or the literal type) of: `reason: 'interrupted'` → `reason`. */
function propertyOf(node: ts.Node): string | undefined {
  const holder = ts.isLiteralTypeNode(node.parent) ? node.parent.parent : node.parent
  return (ts.isPropertyAssignment(holder) || ts.isPropertySignature(holder)) && ts.isIdentifier(holder.name) ? holder.name.text : undefined
}

/** A literal that is a name of another vocabulary the chart shares (see the header). */
const sharedVocabulary = (node: ts.StringLiteralLike) => (propertyOf(node) === 'reason' && node.text === 'interrupted') || (propertyOf(node) === 'kind' && node.text === 'throttled')

/** Where `text` writes a state's name as a string (a shared vocabulary's names excepted). */
function stateLiterals(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && stateNames.has(node.text) && !ts.isImportDeclaration(node.parent)) {
      if (!sharedVocabulary(node)) found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: '${node.text}'`)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))
}

/** Whether an exported value of machines/ holds a waiting state's name (a name itself, or a collection of names). */
function holdsWaitingName(value: unknown): boolean {
  if (typeof value === 'string') return waitingNames.has(value)
  if (value instanceof Set || Array.isArray(value)) return [...value].some((item) => typeof item === 'string' && waitingNames.has(item))
  return false
}

/** Where `text` names a waiting state: its string literals, and the values it imports from machines/ that hold such a name. */
function namings(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const at = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`
  const visit = (node: ts.Node): void => {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && waitingNames.has(node.text) && !ts.isImportDeclaration(node.parent) && !sharedVocabulary(node)) {
      found.push(`${at(node)}: '${node.text}'`)
    }
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && node.moduleSpecifier.text.includes('machines/') && !node.importClause?.isTypeOnly) {
      const module = require(path.resolve(path.dirname(path.join(root, file)), node.moduleSpecifier.text)) as Record<string, unknown>
      const bindings = node.importClause?.namedBindings
      for (const element of bindings && ts.isNamedImports(bindings) ? bindings.elements : []) {
        const name = (element.propertyName ?? element.name).text
        if (!element.isTypeOnly && holdsWaitingName(module[name])) found.push(`${at(element)}: ${name} (imported from ${node.moduleSpecifier.text})`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const sources = files(path.join(root, 'src'))
  .map((file) => path.relative(root, file).split(path.sep).join('/'))
  .filter((file) => !excepted.some((folder) => file.startsWith(folder)))
  .map((file) => ({ file, text: fs.readFileSync(path.join(root, file), 'utf8') }))

test('the chart has waiting states and the sources were read', () => {
  expect(waitingNames.size).toBeGreaterThanOrEqual(3)
  expect(sources.length).toBeGreaterThan(200)
})

test('no module outside machines/ names a particular waiting state: each reads what the chart says of it (waitOf)', () => {
  expect(sources.flatMap(({ file, text }) => namings(file, text))).toEqual([])
})

test('no module outside machines/ writes any other state of the chart as a string: each reads it from the chart', () => {
  expect(stateNames.size).toBeGreaterThanOrEqual(8)
  expect(sources.flatMap(({ file, text }) => stateLiterals(file, text))).toEqual([])
})

test('the check of every state finds a literal and a literal type, and leaves a finish reason and the shared names', () => {
  expect(stateLiterals('src/x.ts', `if (row.to === 'streaming') go()`)).toEqual([`src/x.ts:1: 'streaming'`])
  expect(stateLiterals('src/x.ts', `type Busy = 'tool-running' | 'step-gate'`)).toHaveLength(2)
  expect(stateLiterals('src/x.ts', `const part = { type: 'step-finish', reason: 'interrupted' }\nif (outcome === 'completed' || status === 'idle') go()`)).toEqual([])
  // engine.waiting()'s entry kind is the public name; the state itself is still found
  expect(namings('src/x.ts', `interface E { kind: 'throttled' }\nconst e = { kind: 'throttled' }`)).toEqual([])
  expect(namings('src/x.ts', `if (entry.state === 'throttled') go()`)).toHaveLength(1)
})

test('the check finds what it forbids: a literal, a literal type, and a constant of names imported from machines/', () => {
  const [name] = waitingNames
  expect(namings('src/x.ts', `if (state === '${name}') go()`)).toHaveLength(1)
  expect(namings('src/x.ts', `type End = 'completed' | '${name}'`)).toHaveLength(1)
  // (a comment names it freely)
  expect(namings('src/x.ts', `// waits in '${name}'\nconst a = 1`)).toEqual([])
  // an import of machines/ whose value holds waiting names: the list this check replaced
  jest.doMock(path.join(root, 'machines/some-states'), () => ({ someStates: new Set([name]), other: 1 }), { virtual: true })
  expect(namings('src/engine/x.ts', `import { someStates, other } from '../../machines/some-states'`)).toEqual([
    `src/engine/x.ts:1: someStates (imported from ../../machines/some-states)`,
  ])
})
