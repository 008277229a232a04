/**
 * The code in docs/conversation.md, docs/tools.md, docs/web.md, docs/run-trees.md, docs/durability.md and docs/scheduling.md is complete programs that run: every ```ts
 * block importing 'turnchart' type-checks against the library's types (strict), and runs (with
 * the scripted model of 'turnchart/testing', so it needs no key); a block followed by a
 * "It prints:" line and a ```text block must print exactly that. To run them the way a user's
 * app would, each is bundled by esbuild with `turnchart` resolved to src/ and every package
 * loaded from node_modules. The README's complete examples (its Example and Conversations
 * sections) type-check in the same program, so the first code a user copies cannot drift from
 * the API either (one program: each check of src/ under nodenext costs about 12 s).
 */
import { execFile, execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { build } from 'esbuild'

const root = path.resolve(__dirname, '../..')
const pages = ['docs/conversation.md', 'docs/tools.md', 'docs/web.md', 'docs/run-trees.md', 'docs/durability.md', 'docs/scheduling.md']

export interface DocExample {
  /** `docs/web.md #1`: the page and the example's number on it. */
  name: string
  code: string
  /** What it must print, when the page says. */
  prints?: string
}

/**
 * The examples of a page: its ```ts blocks that import 'turnchart', each with the ```text block
 * that follows it after a line "It prints:".
 *
 * @example
 * docExamples('x.md', "```ts\nimport { createEngine } from 'turnchart'\n```\nIt prints:\n```text\nok\n```") // [{ name: 'x.md #1', code, prints: 'ok\n' }]
 */
export function docExamples(page: string, markdown: string): DocExample[] {
  const blocks = [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], body: m[2], start: m.index!, end: m.index! + m[0].length }))
  const examples: DocExample[] = []
  blocks.forEach((block, i) => {
    if (block.lang !== 'ts' || !/from 'turnchart'/.test(block.body)) return
    const next = blocks[i + 1]
    const prints = next?.lang === 'text' && /^\s*It prints:\s*$/.test(markdown.slice(block.end, next.start)) ? next.body : undefined
    examples.push({ name: `${page} #${examples.length + 1}`, code: block.body, ...(prints !== undefined ? { prints } : {}) })
  })
  return examples
}

const examples = pages.flatMap((page) => docExamples(page, fs.readFileSync(path.join(root, page), 'utf8')))

/** The first ts block after a README heading. */
function blockAfter(readme: string, heading: string): string {
  const section = readme.slice(readme.indexOf(heading))
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
  expect(code).toContain("from 'turnchart'")
  return code!
}
const fileName = (example: DocExample) => example.name.replace(/^docs\//, '').replace(/\.md #/, '-')

// Inside the repository (tmp/ is git-ignored), so packages resolve from its node_modules.
let dir: string
beforeAll(() => {
  fs.mkdirSync(path.join(root, 'tmp'), { recursive: true })
  dir = fs.mkdtempSync(path.join(root, 'tmp', 'doc-examples-'))
  for (const example of examples) fs.writeFileSync(path.join(dir, `${fileName(example)}.mts`), example.code)
})
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

test('each page has examples, and each example that says what it prints is followed by its output', () => {
  for (const page of pages) expect(examples.filter((e) => e.name.startsWith(`${page} `)).length).toBeGreaterThan(0)
  expect(examples.filter((e) => e.prints === undefined).map((e) => e.name)).toEqual([])
})

test("the examples and the README's (Example, Conversations) type-check (strict, against src/)", () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
  fs.writeFileSync(path.join(dir, 'readme-example.mts'), blockAfter(readme, '## Example'))
  fs.writeFileSync(path.join(dir, 'readme-conversations.mts'), blockAfter(readme, '## Conversations'))
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
        paths: { turnchart: [path.join(root, 'src/index.ts')], 'turnchart/testing': [path.join(root, 'src/testing/index.ts')] },
      },
      files: [...examples.map((e) => `${fileName(e)}.mts`), 'readme-example.mts', 'readme-conversations.mts'],
    }),
  )
  let output = ''
  try {
    execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8', stdio: 'pipe' })
  } catch (error) {
    output = String((error as { stdout?: string }).stdout ?? error)
  }
  expect(output).toBe('')
}, 120_000)

test.each(examples.map((e) => [e.name, e] as const))('%s runs and prints what the page says', async (_name, example) => {
  const source = path.join(dir, `${fileName(example)}.mts`)
  const bundle = path.join(dir, `${fileName(example)}.mjs`)
  await build({
    entryPoints: [source],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    alias: { 'turnchart/testing': path.join(root, 'src/testing/index.ts'), turnchart: path.join(root, 'src/index.ts') },
    // src/ loads its optional packages with require(), which an ES module gets this way.
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'warning',
  })
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [bundle], { cwd: dir, encoding: 'utf8', timeout: 30_000 })
  expect(stderr).toBe('')
  expect(stdout).toBe(example.prints)
}, 60_000)

test('docExamples finds a block, its output, and skips blocks that do not import turnchart', () => {
  const page = ["```ts\nimport { createEngine } from 'turnchart'\nconsole.log('ok')\n```", 'It prints:', '```text\nok\n```', '```ts\nconst x = 1\n```', "```ts\nimport { MemoryStore } from 'turnchart'\n```"].join('\n')
  expect(docExamples('x.md', page)).toEqual([
    { name: 'x.md #1', code: "import { createEngine } from 'turnchart'\nconsole.log('ok')\n", prints: 'ok\n' },
    { name: 'x.md #2', code: "import { MemoryStore } from 'turnchart'\n" },
  ])
})
