/**
 * `turnchart eval <suite.json> [--out <dir>] [--concurrency n]`: runs an eval suite (stored
 * turns re-run and scored, see runSuite) and writes its reports; exits 1 when a case fails.
 * Paths in the suite (database, tools module, function scorers' modules) are relative to it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { runSuite, type EvalCase, type EvalSuite, type Scorer, type SuiteResult } from '../testing/eval-suite'
import type { RecordingSource } from '../testing/recording-source'
import { parseArgs, UsageError } from './args'
import { formatTable, htmlReport, junitXml } from './eval-report'
import { CliError, openForReading, type CliIO } from './io'
import { endpointModel, loadTools } from './rerun'

interface SuiteFile {
  name?: string
  database?: string
  model?: { baseURL: string; id: string }
  system?: string
  toolsModule?: string
  scorers?: ScorerFile[]
  cases: Array<Omit<EvalCase, 'scorers'> & { scorers?: ScorerFile[] }>
  concurrency?: number
  budget?: { tokens?: number }
}
type ScorerFile = Exclude<Scorer, { type: 'function' }> | { type: 'function'; name?: string; module: string; export?: string }

export async function evalCommand(argv: string[], io: CliIO): Promise<number> {
  const { positionals, values } = parseArgs(argv, { flags: [], values: ['out', 'concurrency'], positionals: ['suite'] })
  const [file] = positionals
  const concurrency = values.has('concurrency') ? Number(values.get('concurrency')) : undefined
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency > 0)) throw new UsageError(`--concurrency takes a whole number above 0, not ${values.get('concurrency')}`)
  let parsed: SuiteFile
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as SuiteFile
  } catch (error) {
    throw new CliError(`cannot read the suite ${file}: ${error instanceof Error ? error.message : String(error)}`)
  }
  if (!Array.isArray(parsed.cases)) throw new CliError(`the suite ${file} has no cases: give it "cases": [{ "turn": "<turn id>", "scorers": [...] }]`)
  const dir = path.dirname(path.resolve(file))
  // A database URL (scheme://…) is kept as it is; a file path is the suite's folder's.
  const at = (p: string) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(p) ? p : path.resolve(dir, p))
  const suite: EvalSuite = {
    name: parsed.name ?? path.basename(file, '.json'),
    ...(parsed.database ? { database: at(parsed.database) } : {}),
    ...(parsed.model ? { model: endpointModel(parsed.model.baseURL, parsed.model.id, io) } : {}),
    ...(parsed.system !== undefined ? { system: parsed.system } : {}),
    ...(parsed.toolsModule ? { tools: loadTools(at(parsed.toolsModule)) } : {}),
    scorers: (parsed.scorers ?? []).map((s) => scorerOf(s, at)),
    cases: parsed.cases.map((c) => ({ ...c, ...(c.database ? { database: at(c.database) } : {}), scorers: (c.scorers ?? []).map((s) => scorerOf(s, at)) })),
  }
  const result = await runSuite(suite, {
    concurrency: concurrency ?? parsed.concurrency ?? 2,
    ...(parsed.budget ? { budget: parsed.budget } : {}),
    open: async (database) => {
      const store = await openForReading(database)
      const source: RecordingSource = {
        getTurn: (id) => store.read((s) => s.turns.get(id)),
        transitions: (id) => store.read((s) => s.transitions.list(id)),
        messages: (id) => store.read((s) => s.messages.list(id)),
        turnInput: (id) => store.read((s) => s.turns.input(id)),
      }
      return { source, close: () => store.close() }
    },
    onProgress: ({ case: name, done, total, result: r }) => io.stderr.write(r ? `[${done}/${total}] ${r.status} ${name}\n` : `[${done}/${total}] running ${name}\n`),
  })
  io.stdout.write(formatTable(result))
  const out = values.get('out')
  if (out) writeReports(result, out, io)
  return result.failed + result.errors > 0 ? 1 : 0
}

function writeReports(result: SuiteResult, out: string, io: CliIO): void {
  fs.mkdirSync(out, { recursive: true })
  const earlier = fs
    .readdirSync(out)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .flatMap((f) => {
      try {
        const run = JSON.parse(fs.readFileSync(path.join(out, f), 'utf8')) as SuiteResult
        return typeof run.score === 'number' && Array.isArray(run.cases) ? [run] : []
      } catch {
        return []
      }
    })
  const base = path.join(out, result.runId)
  fs.writeFileSync(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`)
  fs.writeFileSync(`${base}.xml`, junitXml(result))
  fs.writeFileSync(`${base}.html`, htmlReport(result, earlier))
  io.stdout.write(`reports: ${base}.json, ${base}.xml, ${base}.html\n`)
}

function scorerOf(scorer: ScorerFile, at: (p: string) => string): Scorer {
  if (scorer.type !== 'function') return scorer
  const file = at(scorer.module)
  let loaded: Record<string, unknown>
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    loaded = require(file) as Record<string, unknown>
  } catch (error) {
    throw new CliError(`cannot load the scorer module ${scorer.module}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const fn = loaded[scorer.export ?? 'default'] ?? (scorer.export ? undefined : loaded.score)
  if (typeof fn !== 'function') throw new CliError(`the scorer module ${scorer.module} exports no function ${scorer.export ?? 'default (or score)'}`)
  return { type: 'function', name: scorer.name ?? `${path.basename(scorer.module)}${scorer.export ? `#${scorer.export}` : ''}`, score: fn as Extract<Scorer, { type: 'function' }>['score'] }
}
