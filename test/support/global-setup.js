/**
 * Jest's global setup: the TypeScript entry points that tests run as child processes (the CLI,
 * the crash tests' children, the chat example's server) bundled once per run with esbuild into tmp/test-bin/, so that
 * each child starts as plain Node instead of compiling src/ through ts-node again (about 1.5 s
 * a child). The bundles are the same sources; packages stay external (loaded from
 * node_modules). test/support/compiled.ts finds them, and falls back to ts-node without them.
 *
 * It also makes the run's temporary folder (TURNCHART_TEST_RUN, removed by
 * test/support/global-teardown.js), where test/support/packed-package.ts packs the package once
 * for every test of the run that needs it.
 */
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const root = path.resolve(__dirname, '../..')
const out = path.join(root, 'tmp/test-bin')

const entries = [
  'src/cli/main.ts',
  ...fs
    .readdirSync(path.join(root, 'test/crash'))
    .filter((name) => name.endsWith('-child.ts') || name === 'pg-worker.ts')
    .map((name) => `test/crash/${name}`),
  'test/restate/service-child.ts',
]

/** How each entry is bundled: for Node, CommonJS, its packages loaded from node_modules. */
const nodeBundle = { bundle: true, platform: 'node', format: 'cjs', target: 'node20', packages: 'external', logLevel: 'warning' }

module.exports = async function globalSetup() {
  const esbuild = require('esbuild')
  fs.rmSync(out, { recursive: true, force: true })
  await esbuild.build({
    entryPoints: entries.map((entry) => path.join(root, entry)),
    outbase: root,
    outdir: out,
    ...nodeBundle,
    sourcemap: 'inline',
  })
  // The chat example (test/examples) finds its page's sources beside its own module: its bundle's
  // `__dirname` is its source folder (the modules of src/ it bundles read theirs only for the
  // viewer, which the example does not serve). Through ts-node, each start compiled src/ (~5 s).
  await esbuild.build({
    entryPoints: [path.join(root, 'examples/chat/server.ts')],
    outfile: path.join(out, 'examples/chat/server.js'),
    ...nodeBundle,
    sourcemap: 'inline',
    define: { __dirname: JSON.stringify(path.join(root, 'examples/chat')) },
  })
  // The viewer reads its page beside its own module, which the CLI's bundle now is: built once
  // here (the chart's layout and the page's script), as scripts/build.mjs builds it for dist/.
  await esbuild.build({
    entryPoints: [path.join(root, 'src/viewer/build-page.ts')],
    outfile: path.join(out, 'build-page.js'),
    ...nodeBundle,
  })
  const { buildViewerPage } = require(path.join(out, 'build-page.js'))
  fs.writeFileSync(path.join(out, 'src/cli/viewer-page.html'), await buildViewerPage(path.join(root, 'src/viewer/page')))
  process.env.TURNCHART_TEST_BIN = out
  process.env.TURNCHART_TEST_RUN = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-run-'))
}
