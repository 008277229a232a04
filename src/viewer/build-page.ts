/**
 * Builds the viewer's page: one self-contained HTML file (no CDN, no request but to its own
 * server), made of the page template (page/page.html), the chart laid out by ELK
 * (chart-layout.ts) as JSON, and the page's script (page/*.ts) bundled by esbuild. It runs at
 * build time (scripts/build.mjs writes the page into dist/, which the package ships), in the
 * test setup, and when the viewer runs from its TypeScript sources; elkjs and esbuild are
 * development dependencies only.
 */
import fs from 'node:fs'
import path from 'node:path'
import { chartGraph } from '../chart/chart-graph'
import { layoutChart, type ElkLike } from './chart-layout'

/** The folder of the page's template and script sources. */
export const pageSources = path.join(__dirname, 'page')

/** JSON in an inline script: no `<`, so nothing in it can close the script. */
const inlineJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c')

/** The bundled script in an inline script: it must not hold what would close the script. */
function inlineScript(code: string): string {
  if (/<\/script|<!--/i.test(code)) throw new Error('the bundled viewer script holds </script or <!--: it cannot be inlined')
  return code
}

/**
 * @example
 * fs.writeFileSync('dist/cjs/src/viewer/viewer-page.html', await buildViewerPage())
 */
export async function buildViewerPage(sources: string = pageSources): Promise<string> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const ELK = require('elkjs/lib/elk.bundled.js') as new () => ElkLike
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const esbuild = require('esbuild') as typeof import('esbuild')
  const drawing = await layoutChart(chartGraph(), new ELK())
  const bundle = await esbuild.build({
    entryPoints: [path.join(sources, 'main.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    target: 'es2020',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  })
  const script = bundle.outputFiles[0].text
  const template = fs.readFileSync(path.join(sources, 'page.html'), 'utf8')
  const parts = template.split(/<!-- (chart-drawing|page-script) -->/)
  if (parts.length !== 5) throw new Error(`${path.join(sources, 'page.html')} must hold <!-- chart-drawing --> and <!-- page-script --> once each`)
  const fill: Record<string, string> = {
    'chart-drawing': `<script type="application/json" id="chart-drawing">${inlineJson(drawing)}</script>`,
    'page-script': `<script>${inlineScript(script)}</script>`,
  }
  return parts.map((part, i) => (i % 2 === 1 ? fill[part] : part)).join('')
}
