/**
 * `turnchart eval`'s reports of a suite run: a terminal table, JUnit XML (for CI), and one
 * self-contained HTML page (inline CSS and SVG, no external assets) with each case's
 * trajectory diff and its scores, and the suite's score across earlier runs.
 */
import type { CaseResult, SuiteResult } from '../testing/eval-suite'
import { formatTrajectoryDiff } from '../testing/trajectory-diff'

/** The cases by status as the rows say them: passed and failed, then errors and skipped when there are some. */
function counts(result: SuiteResult): string {
  const more = [result.errors ? `${result.errors} error${result.errors === 1 ? '' : 's'}` : '', result.skipped ? `${result.skipped} skipped` : '']
  return [`${result.passed} passed`, `${result.failed} failed`, ...more.filter(Boolean)].join(', ')
}

export function formatTable(result: SuiteResult): string {
  const rows = result.cases.map((c) => [c.status === 'passed' ? 'pass' : c.status, c.name, `${c.scores.filter((s) => s.pass).length}/${c.scores.length}`, c.status === 'passed' ? '' : failure(c)])
  const widths = [6, Math.max(4, ...rows.map((r) => r[1].length))]
  const lines = [`${'result'.padEnd(widths[0])}  ${'case'.padEnd(widths[1])}  scores  why`, ...rows.map((r) => `${r[0].padEnd(widths[0])}  ${r[1].padEnd(widths[1])}  ${r[2].padEnd(6)}  ${r[3]}`)]
  lines.push('', `${result.suite}: ${counts(result)} of ${result.cases.length}; score ${(result.score * 100).toFixed(0)}%; ${result.usage.inputTokens + result.usage.outputTokens} tokens`)
  return `${lines.map((line) => line.trimEnd()).join('\n')}\n`
}

function failure(c: CaseResult): string {
  return c.error ?? c.scores.filter((s) => !s.pass).map((s) => `${s.scorer}: ${s.reason}`).join('; ')
}

const xml = (text: string) => text.replace(/[<>&"']/g, (ch) => `&#${ch.charCodeAt(0)};`).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')

export function junitXml(result: SuiteResult): string {
  const seconds = (ms: number) => (ms / 1000).toFixed(3)
  const cases = result.cases.map((c) => {
    const open = `    <testcase classname="${xml(result.suite)}" name="${xml(c.name)}" time="${seconds(c.durationMs)}">`
    const body =
      c.status === 'skipped' ? `      <skipped message="${xml(c.error ?? '')}"/>`
      : c.status === 'error' ? `      <error message="${xml(c.error ?? '')}"/>`
      : c.status === 'failed' ? `      <failure message="${xml(failure(c))}">${xml(c.scores.map((s) => `${s.pass ? 'pass' : 'FAIL'} ${s.scorer}: ${s.reason}`).join('\n'))}</failure>`
      : ''
    return body ? `${open}\n${body}\n    </testcase>` : `${open}</testcase>`
  })
  const count = (status: string) => result.cases.filter((c) => c.status === status).length
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(result.suite)}" tests="${result.cases.length}" failures="${count('failed')}" errors="${count('error')}">`,
    `  <testsuite name="${xml(result.suite)}" tests="${result.cases.length}" failures="${count('failed')}" errors="${count('error')}" skipped="${count('skipped')}" timestamp="${result.startedAt}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n')
}

/** Bars of a case's scores: one per scorer, green when it passed. */
function scoresChart(c: CaseResult): string {
  const bar = 22
  const height = Math.max(1, c.scores.length) * bar + 4
  const bars = c.scores.map((s, i) => `<rect x="0" y="${i * bar + 2}" width="${s.pass ? 120 : 30}" height="16" fill="${s.pass ? '#2e7d32' : '#c62828'}"><title>${xml(s.reason)}</title></rect><text x="128" y="${i * bar + 15}" font-size="12">${xml(`${s.pass ? 'pass' : 'fail'} ${s.scorer}`)}</text>`)
  return `<svg class="scores" xmlns="http://www.w3.org/2000/svg" width="520" height="${height}" role="img" aria-label="scores of ${xml(c.name)}">${bars.join('')}</svg>`
}

/** The suite's score per run, oldest first: a line of points. */
function historyChart(runs: SuiteResult[]): string {
  const width = 520
  const height = 140
  const x = (i: number) => 30 + (runs.length === 1 ? 0 : (i * (width - 60)) / (runs.length - 1))
  const y = (s: number) => height - 20 - s * (height - 40)
  const points = runs.map((r, i) => `${x(i)},${y(r.score)}`).join(' ')
  const dots = runs.map((r, i) => `<circle class="run" cx="${x(i)}" cy="${y(r.score)}" r="4" fill="#1565c0"><title>${xml(`${r.runId}: ${(r.score * 100).toFixed(0)}%`)}</title></circle><text x="${x(i) - 10}" y="${y(r.score) - 8}" font-size="11">${(r.score * 100).toFixed(0)}%</text>`)
  return `<svg id="history" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" role="img" aria-label="score across ${runs.length} runs"><line x1="20" y1="${y(0)}" x2="${width - 10}" y2="${y(0)}" stroke="#999"/><polyline points="${points}" fill="none" stroke="#1565c0"/>${dots.join('')}</svg>`
}

/** The page of a run; `earlier` are the suite's earlier runs (read from the out folder), oldest first. */
export function htmlReport(result: SuiteResult, earlier: SuiteResult[] = []): string {
  const runs = [...earlier.filter((r) => r.suite === result.suite && r.runId !== result.runId), result]
  const cases = result.cases.map((c) => `<section class="case ${c.status}" data-case="${xml(c.name)}">
<h2>${xml(c.name)} <span class="status">${c.status}</span></h2>
<p class="turn">turn ${xml(c.turnId)}${c.error ? ` — ${xml(c.error)}` : ''}</p>
${scoresChart(c)}
<ul>${c.scores.map((s) => `<li class="${s.pass ? 'pass' : 'fail'}">${xml(s.scorer)}: ${xml(s.reason)}</li>`).join('')}</ul>
${c.diff ? `<h3>trajectory: original vs re-run</h3><pre class="diff">${xml(formatTrajectoryDiff(c.diff, { color: false }))}</pre>` : ''}
</section>`)
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${xml(result.suite)} — eval ${xml(result.runId)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:1100px}pre{background:#f6f6f6;padding:8px;overflow:auto;font-size:12px}.status{font-size:12px;padding:2px 6px;border-radius:4px;background:#eee}.passed .status{background:#c8e6c9}.failed .status,.error .status{background:#ffcdd2}li.fail{color:#c62828}</style>
</head><body>
<h1>${xml(result.suite)}</h1>
<p id="summary">run ${xml(result.runId)}: ${counts(result)} of ${result.cases.length}; score ${(result.score * 100).toFixed(0)}%; ${result.usage.inputTokens + result.usage.outputTokens} tokens</p>
<h2>score across runs (${runs.length})</h2>
${historyChart(runs)}
${cases.join('\n')}
</body></html>
`
}
