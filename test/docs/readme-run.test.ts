/**
 * The README's Example, run as a user would copy it, with no substitution: it starts the
 * scripted server of `turnchart/testing` itself (no MODEL_URL), writes ./agent.db in its working
 * folder, and lists that folder. Its standard output is the answer alone (the reasoning, the
 * tool call and the states go to standard error).
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'

const root = path.resolve(__dirname, '../..')
let dir: string
beforeAll(() => {
  // Inside the repository (tmp/ is git-ignored), so the bundle's packages resolve from its node_modules.
  fs.mkdirSync(path.join(root, 'tmp'), { recursive: true })
  dir = fs.mkdtempSync(path.join(root, 'tmp', 'readme-run-'))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

test('the README example runs as printed, without a key: the answer on stdout, the reasoning, the call and the states apart', async () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
  const code = /```ts\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('## Example')))![1]
  fs.writeFileSync(path.join(dir, 'example.mts'), code)
  const esbuild = await import('esbuild')
  await esbuild.build({
    entryPoints: [path.join(dir, 'example.mts')],
    outfile: path.join(dir, 'example.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    alias: { turnchart: path.join(root, 'src/index.ts'), 'turnchart/testing': path.join(root, 'src/testing/index.ts') },
    // the library's lazy require() of optional drivers, inside an ES module bundle
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
    logLevel: 'error',
  })
  const env = { ...process.env }
  for (const name of ['MODEL_URL', 'MODEL', 'API_KEY']) delete env[name]
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['example.mjs'], { cwd: dir, env, encoding: 'utf8', timeout: 15_000 })
  expect(stdout).toBe('Let me look. The folder holds your project.')
  expect(stderr).toContain('The list shows the files.')
  expect(stderr).toContain('[list({"path":"."})]')
  expect(stderr).toContain('[tool-running → streaming]')
  expect(stderr).toMatch(/\ncompleted, \d+ tokens in, \d+ out\n$/)
  expect(fs.existsSync(path.join(dir, 'agent.db'))).toBe(true)
  // What the README shows it printing (both streams, as a terminal shows them) is what it prints.
  const both = await promisify(execFile)('/bin/sh', ['-c', `"${process.execPath}" example.mjs 2>&1`], { cwd: dir, env, encoding: 'utf8', timeout: 15_000 })
  const section = readme.slice(readme.indexOf('## Example'))
  const shown = /It prints:\n\n```text\n([\s\S]*?)```/.exec(section)?.[1]
  expect(shown).toBe(both.stdout)
})

test('the README example, pointed at a port nobody listens on, prints the failure and its cause', async () => {
  const closed = await new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
  const env = { ...process.env, MODEL_URL: `http://127.0.0.1:${closed}/v1` }
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['example.mjs'], { cwd: dir, env, encoding: 'utf8', timeout: 30_000 })
  expect(stdout).toBe('')
  expect(stderr).toContain(`failed: RetriesExhaustedError: retries exhausted after 3 attempts; last error: Cannot connect to API: connect ECONNREFUSED 127.0.0.1:${closed}`)
})
