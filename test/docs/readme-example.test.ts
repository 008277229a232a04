/**
 * The README's complete example type-checks against the library's own types, so the first
 * code a user copies cannot drift from the API.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')

/** The first ts block after a README heading. */
function blockAfter(readme: string, heading: string): string {
  const section = readme.slice(readme.indexOf(heading))
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
  expect(code).toContain("from 'turnchart'")
  return code!
}

test('the README examples (Example, Conversations) compile', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
  const code = blockAfter(readme, '## Example')
  const conversations = blockAfter(readme, '## Conversations')
  // Inside the repository (tmp/ is git-ignored), so packages resolve from its node_modules.
  fs.mkdirSync(path.join(root, 'tmp'), { recursive: true })
  const dir = fs.mkdtempSync(path.join(root, 'tmp', 'readme-'))
  try {
    fs.writeFileSync(path.join(dir, 'example.mts'), code)
    fs.writeFileSync(path.join(dir, 'conversations.mts'), conversations)
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
          paths: { turnchart: [path.join(root, 'src/index.ts')] },
        },
        files: ['example.mts', 'conversations.mts'],
      }),
    )
    const tsc = path.join(root, 'node_modules/typescript/bin/tsc')
    let output = ''
    try {
      execFileSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8', stdio: 'pipe' })
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error)
    }
    expect(output).toBe('')
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}, 60_000)
