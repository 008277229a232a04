/**
 * The options table of docs/api.md and the code's `EngineOptions` type agree, both ways. The keys are
 * read from the type itself with the TypeScript checker (not from a list that could drift).
 * A row `group.key` documents a property of a nested option group; when a group has such
 * rows, every property of the group needs one. A group documented as one row (`limits`,
 * `pricing`) needs no sub-rows.
 */
import fs from 'node:fs'
import path from 'node:path'
import ts from 'typescript'

const root = path.resolve(__dirname, '../..')

/** First-column option names of the table under `### Options`. */
function readmeOptions(): string[] {
  const readme = fs.readFileSync(path.join(root, 'docs/api.md'), 'utf8')
  const section = readme.split(/^### Options\s*$/m)[1]
  if (!section) throw new Error('docs/api.md has no "### Options" section')
  const rows: string[] = []
  for (const line of section.split('\n').slice(1)) {
    if (/^#{1,3} /.test(line)) break
    const cell = /^\|\s*`([^`]+)`\s*\|/.exec(line)
    if (cell) rows.push(cell[1])
  }
  return rows
}

/** `EngineOptions`' properties, each with the properties of its (non-nullable) type. */
function codeOptions(): Map<string, string[]> {
  const file = path.join(root, 'src/config/options.ts')
  const program = ts.createProgram([file], { strict: true, skipLibCheck: true, noEmit: true, module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, types: [] })
  const checker = program.getTypeChecker()
  const source = program.getSourceFile(file)!
  let found: ts.InterfaceDeclaration | undefined
  ts.forEachChild(source, (node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === 'EngineOptions') found = node
  })
  if (!found) throw new Error('src/config/options.ts has no interface EngineOptions')
  const options = new Map<string, string[]>()
  for (const property of checker.getPropertiesOfType(checker.getTypeAtLocation(found))) {
    const type = checker.getNonNullableType(checker.getTypeOfSymbolAtLocation(property, found))
    const nested = type.isUnion() ? [] : checker.getPropertiesOfType(type).map((p) => p.name)
    options.set(property.name, nested)
  }
  return options
}

test('every option in the table of docs/api.md exists in EngineOptions, and every option of EngineOptions is in the table', () => {
  const rows = readmeOptions()
  const code = codeOptions()
  expect(rows.length).toBeGreaterThan(10)
  expect(code.size).toBeGreaterThan(10)

  const problems: string[] = []
  const seen = new Set<string>()
  for (const row of rows) {
    if (seen.has(row)) problems.push(`docs/api.md documents ${row} twice`)
    seen.add(row)
    const [group, key, ...rest] = row.split('.')
    if (!code.has(group)) problems.push(`docs/api.md documents ${row}, but EngineOptions has no ${group}`)
    else if (key !== undefined && (rest.length > 0 || !code.get(group)!.includes(key))) problems.push(`docs/api.md documents ${row}, but ${group} has no ${row.slice(group.length + 1)}`)
  }
  for (const [name, nested] of code) {
    const subRows = rows.filter((row) => row.startsWith(`${name}.`))
    if (!rows.includes(name) && subRows.length === 0) problems.push(`EngineOptions.${name} is not in the table of docs/api.md`)
    if (subRows.length > 0) {
      for (const key of nested) if (!rows.includes(`${name}.${key}`)) problems.push(`EngineOptions.${name}.${key} is not in the table of docs/api.md`)
    }
  }
  expect(problems).toEqual([])
}, 60_000)
