// Builds dist/: CommonJS with declarations (tsc), plus thin ES module wrappers that re-export
// the CommonJS build, so both `import` and `require` get the same single copy of the code.
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
fs.rmSync(path.join(root, 'dist'), { recursive: true, force: true })
execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' })

const require = createRequire(import.meta.url)

// The viewer's page, self-contained (no CDN): the chart laid out by ELK and the page's script
// bundled by esbuild, built now (both are development dependencies) and shipped next to its
// server module.
const { buildViewerPage } = require(path.join(root, 'dist/cjs/src/viewer/build-page.js'))
fs.writeFileSync(path.join(root, 'dist/cjs/src/viewer/viewer-page.html'), await buildViewerPage(path.join(root, 'src/viewer/page')))

const entries = { index: 'dist/cjs/src/index.js', testing: 'dist/cjs/src/testing/index.js', host: 'dist/cjs/src/host/index.js', restate: 'dist/cjs/src/restate/index.js' }
// turnchart/restate makes its object with the Restate SDK's build of the module system that loads
// it: the SDK ships a CommonJS and an ES module build, and its endpoint knows only its own build's
// handlers and TerminalError. So the ES module entry passes the SDK's ES module.
const bound = {
  restate: {
    names: ['createRestateService'],
    lines: [`import * as sdk from '@restatedev/restate-sdk'`, 'export const createRestateService = (options) => cjs.createRestateServiceWith(sdk, options)'],
  },
}
fs.mkdirSync(path.join(root, 'dist/esm'), { recursive: true })
for (const [name, file] of Object.entries(entries)) {
  const own = bound[name] ?? { names: [], lines: [] }
  const names = Object.keys(require(path.join(root, file))).filter((key) => key !== 'default' && key !== '__esModule' && !own.names.includes(key))
  const from = path.relative(path.join(root, 'dist/esm'), path.join(root, file)).split(path.sep).join('/')
  const defaults = own.names.length ? `{ ...cjs, ${own.names.join(', ')} }` : 'cjs'
  const lines = [`import cjs from './${from}'`, `export const { ${names.join(', ')} } = cjs`, ...own.lines, `export default ${defaults}`, '']
  fs.writeFileSync(path.join(root, `dist/esm/${name}.mjs`), lines.join('\n'))
  fs.writeFileSync(path.join(root, `dist/esm/${name}.d.mts`), `export * from './${from}'\n`)
}
console.log('built dist/cjs and dist/esm')
