/**
 * Explicit inputs (issue 34): the chart's actors get their turn from their input (its `turnId`,
 * among the turns their engine's chart binds: turn-actors.ts `EngineChart`, provided once per
 * engine since issue 54), not from a map keyed by their actor system; what an engine hands the code above it (the web edge, the tests)
 * is a member of the engine (`engine.notifications`), never a module-level WeakMap keyed by the
 * engine object, which no reader of the `Engine` type can see.
 */
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))
}

const sources = files(path.join(root, 'src')).map((file) => ({ file: path.relative(root, file), text: fs.readFileSync(file, 'utf8') }))

/** A WeakMap made at a module's top level (a side channel every caller of the module shares). */
const moduleWeakMap = /^(?:export\s+)?(?:const|let|var)\s+\w+\s*=\s*new WeakMap\b/m

test('the source was read', () => {
  expect(sources.length).toBeGreaterThan(200)
  // The pattern finds what it is for (a module-level cache that is allowed: tools' schemas).
  expect(sources.filter((s) => moduleWeakMap.test(s.text)).map((s) => s.file)).toContain(path.join('src', 'tools', 'json-schema-validator.ts'))
})

test('no module-level WeakMap keyed by the engine', () => {
  // The folders that hold an engine: none keeps a module-level WeakMap at all.
  const engineFolders = ['engine', 'ui', 'viewer', 'control', 'conversation', 'cli', 'testing'].map((f) => path.join('src', f) + path.sep)
  const inEngineFolders = sources.filter((s) => engineFolders.some((f) => s.file.startsWith(f)) && moduleWeakMap.test(s.text)).map((s) => s.file)
  expect(inEngineFolders).toEqual([])
  // Anywhere: no WeakMap typed by the engine, and none read or written with an engine as its key.
  const byEngine = sources.filter((s) => /WeakMap<\s*(?:Engine|object)\b[^>]*>[\s\S]{0,400}?\.(?:get|set|has)\(\s*engine\b/.test(s.text) || /WeakMap<\s*Engine\b/.test(s.text)).map((s) => s.file)
  expect(byEngine).toEqual([])
})

test("no actor finds its turn through a map keyed by its actor system: an actor's input, and the turn it names, are its whole contract", () => {
  // `turns.set(actor.system, …)` / `turns.get(system)`: a WeakMap keyed by XState's actor system
  const bySystem = /\.(?:set|get|has)\(\s*(?:\w+\.)?system\b/
  expect(sources.filter((s) => bySystem.test(s.text)).map((s) => s.file)).toEqual([])
  // The pattern finds what it is for.
  expect(bySystem.test('turns.set(actor.system, { gate, turn })')).toBe(true)
  // The chart is provided once per engine (a chart per turn cost ~9 % of a step's CPU): only the
  // engine's chart provides it, and its actors find their turn by their input's `turnId`.
  const provides = sources.filter((s) => /\bturnMachine\.provide\(/.test(s.text)).map((s) => s.file)
  expect(provides).toEqual([path.join('src', 'turn', 'turn-actors.ts')])
  const actors = sources.find((s) => s.file === path.join('src', 'turn', 'turn-actors.ts'))!.text
  expect(actors).toMatch(/class EngineChart\b[\s\S]*this\.#turns\.get\(input\.turnId\)/)
  expect(sources.filter((s) => /\bbindTurn\b|\bturnOf\(/.test(s.text)).map((s) => s.file)).toEqual([])
})

test('no Symbol put in the context a tool call gets: the child turn runner is a typed member of TurnToolContext', () => {
  // A file that builds or reads `experimental_context` and names a Symbol carries a hidden key there.
  const hidden = sources.filter((s) => /experimental_context/.test(s.text) && /\bSymbol(?:\.for)?\(/.test(s.text)).map((s) => s.file)
  expect(hidden).toEqual([])
  // Nor is a property defined on it out of sight (`Object.defineProperty(context, …, { enumerable: false })`).
  const defined = sources.filter((s) => /experimental_context/.test(s.text) && /Object\.defineProperty\(/.test(s.text)).map((s) => s.file)
  expect(defined).toEqual([])
  expect(sources.find((s) => s.file === path.join('src', 'tools', 'call-info.ts'))?.text).toMatch(/childTurns\?: ChildTurnRunner/)
})

test('createEngine builds its parts in order: no function held in a `let` and patched once a later part exists', () => {
  const text = sources.find((s) => s.file === path.join('src', 'engine', 'create-engine.ts'))!.text
  // `let abortElsewhere: (sessionId: string) => Promise<void> = async () => undefined`, assigned later
  const patchedFunction = /^\s*let\s+\w+\s*(?::\s*\([^)]*\)\s*=>[^=]+)?=\s*(?:async\s*)?\([^)]*\)\s*=>/m
  expect(patchedFunction.test('  let abortElsewhere: (sessionId: string) => Promise<void> = async () => undefined')).toBe(true)
  expect(patchedFunction.test(text)).toBe(false)
  // A part handed a thunk of a later one (`recover: () => recover()` before `const recover`) is a forward reference.
  const thunks = [...text.matchAll(/(\w+): \(\) => (\w+)\(\)/g)].filter(([, , callee]) => text.indexOf(`const ${callee} =`) > text.indexOf(`${callee}: () => ${callee}()`))
  expect(thunks.map(([call]) => call)).toEqual([])
})
