/**
 * The README's Example, run as a user would copy it: its provider pointed at the scripted
 * server and its database at a temporary file, nothing else changed. Its standard output is
 * the answer alone (the reasoning and the log go to standard error).
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import fs from 'node:fs'
import path from 'node:path'
import { startScriptedServer, type ScriptedServer } from '../../src/testing'

const root = path.resolve(__dirname, '../..')
let server: ScriptedServer
let dir: string
beforeAll(async () => {
  server = await startScriptedServer()
  fs.mkdirSync(path.join(root, 'tmp'), { recursive: true })
  dir = fs.mkdtempSync(path.join(root, 'tmp', 'readme-run-'))
})
afterAll(async () => {
  await server.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

test('the README example prints the answer, and the reasoning apart from it', async () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
  const example = /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Example')))![1]
  const code = example.replace("'http://127.0.0.1:11434/v1'", JSON.stringify(server.url)).replace("'./agent.db'", JSON.stringify(path.join(dir, 'agent.db')))
  expect(code).toContain(server.url) // the substitutions found their places
  fs.writeFileSync(path.join(dir, 'example.mts'), code)
  const esbuild = await import('esbuild')
  await esbuild.build({
    entryPoints: [path.join(dir, 'example.mts')],
    outfile: path.join(dir, 'example.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    alias: { turnchart: path.join(root, 'src/index.ts') },
    // the library's lazy require() of optional drivers, inside an ES module bundle
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'error',
  })
  server.push({ type: 'stream', chunks: [{ reasoning: 'Let me look at the folder. ' }, { tool: { name: 'list', input: { path: './src' } } }] })
  server.reasoning('It holds the sources.', 'The folder holds the library sources.')
  // (asynchronously: the scripted server answers from this process)
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(dir, 'example.mjs')], { cwd: root, encoding: 'utf8', timeout: 15_000 })
  expect(stdout).toBe('The folder holds the library sources.')
  expect(stderr).toContain('Let me look at the folder.')
  expect(stderr).toContain('[list({"path":"./src"})]')
  expect(stderr).toContain('completed')
})
