// Regenerates the Mermaid diagram of the turn chart in docs/architecture.md (between the
// chart markers). `npm test` fails when the file is out of date.
import fs from 'node:fs'
import path from 'node:path'
import { renderChartBlock, replaceChartBlock } from '../src/chart/chart-docs'

const file = path.resolve(__dirname, '../docs/architecture.md')
const text = fs.readFileSync(file, 'utf8')
const next = replaceChartBlock(text, renderChartBlock())
if (next !== text) {
  fs.writeFileSync(file, next)
  console.log('docs/architecture.md: chart updated')
} else {
  console.log('docs/architecture.md: chart already up to date')
}
