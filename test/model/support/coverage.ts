/**
 * Transition coverage: which test walked which edge. Each model test file writes its own
 * record to tmp/transition-coverage/<file>.json (tmp/ is git-ignored);
 * `npm run coverage:transitions` (scripts/coverage-transitions.ts) merges them with the
 * machine's edges and prints `transitions covered: N/M`.
 */
import fs from 'node:fs'
import path from 'node:path'

export const coverageDir = path.resolve(__dirname, '../../../tmp/transition-coverage')

export interface CoverageRecord {
  /** The test file, relative to the repository. */
  file: string
  /** When the record was written (ms). */
  time: number
  /** Test name → the edge keys it walked (confirmed against the persisted log). */
  walks: Record<string, string[]>
}

export class CoverageRecorder {
  private readonly walks: Record<string, Set<string>> = {}

  constructor(private readonly file: string) {}

  record(test: string, edges: Iterable<string>): void {
    const set = (this.walks[test] ??= new Set())
    for (const edge of edges) set.add(edge)
  }

  /** Every edge walked by some test of this file. */
  covered(): Set<string> {
    return new Set(Object.values(this.walks).flatMap((set) => [...set]))
  }

  write(): void {
    fs.mkdirSync(coverageDir, { recursive: true })
    const record: CoverageRecord = {
      file: path.relative(path.resolve(__dirname, '../../..'), this.file),
      time: Date.now(),
      walks: Object.fromEntries(Object.entries(this.walks).map(([test, set]) => [test, [...set].sort()])),
    }
    const name = path.basename(this.file).replace(/\W+/g, '-')
    fs.writeFileSync(path.join(coverageDir, `${name}.json`), JSON.stringify(record, null, 2))
  }
}

export function readCoverage(): CoverageRecord[] {
  if (!fs.existsSync(coverageDir)) return []
  return fs
    .readdirSync(coverageDir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => JSON.parse(fs.readFileSync(path.join(coverageDir, name), 'utf8')) as CoverageRecord)
}
