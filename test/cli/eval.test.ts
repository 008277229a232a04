/**
 * `turnchart eval <suite.json> --out <dir>`: the CLI (a child process) re-runs three turns stored
 * in a real SQLite file against their recorded responses, scores them (one case fails a scorer),
 * exits 1, and writes JSON, JUnit XML (read back by an XML parser) and an HTML report that
 * headless Chromium opens: each case's trajectory diff and score chart visible, and after a
 * second run the suite's score across both runs.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { tool } from 'ai'
import { XMLParser } from 'fast-xml-parser'
import { chromium } from 'playwright-core'
import { z } from 'zod'
import { createEngine } from '../../src'
import { startScriptedServer, type ScriptedServer, type SuiteResult } from '../../src/testing'
import { chromiumBinary, testNeeding } from '../support/requires'
import { modelFor } from '../support/harness'
import { runCli } from './run-cli'

jest.setTimeout(120_000)

const binary = chromiumBinary()
const browserTest = testNeeding(binary)

let server: ScriptedServer
let work: string
let suiteFile: string
const turns: string[] = []

const add = tool({ description: 'Add two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }), execute: async ({ a, b }) => ({ sum: a + b }) })

beforeAll(async () => {
  server = await startScriptedServer()
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'turnchart-eval-'))
  const database = path.join(work, 'agent.db')
  const engine = await createEngine({ database, model: modelFor(server), system: 'You add numbers.', tools: { add } })
  const session = await engine.createSession()
  // Turn 1: a tool call, then the sum.
  server.push({ type: 'stream', chunks: [{ tool: { name: 'add', input: { a: 1, b: 2 }, id: 'call_1' } }], usage: { input: 20, output: 5 } })
  server.text('The sum is 3.', { usage: { input: 30, output: 4 } })
  // Turn 2: a JSON answer.
  server.text('{"sum": 7}', { usage: { input: 10, output: 3 } })
  // Turn 3: an answer with no tool call.
  server.text('I think it is 12.', { usage: { input: 10, output: 5 } })
  for (const prompt of ['Add 1+2.', 'Add 3+4 as JSON.', 'Add 5+7.']) {
    const turn = engine.prompt(session.id, prompt)
    expect((await turn.done).outcome).toBe('completed')
    turns.push(turn.id)
  }
  await engine.close()
  suiteFile = path.join(work, 'suite.json')
  fs.writeFileSync(
    suiteFile,
    JSON.stringify({
      name: 'adding',
      database: 'agent.db',
      scorers: [{ type: 'excludes', text: ['I cannot'] }],
      cases: [
        { name: 'adds with the tool', turn: turns[0], scorers: [{ type: 'toolCalls', expected: ['add'] }, { type: 'includes', text: ['3'] }] },
        { name: 'answers JSON', turn: turns[1], scorers: [{ type: 'jsonSchema', schema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] } }] },
        { name: 'uses the tool', turn: turns[2], scorers: [{ type: 'toolCalls', expected: ['add'], match: 'subset' }] },
      ],
    }),
  )
})
afterAll(async () => {
  await server.close()
  fs.rmSync(work, { recursive: true, force: true })
})

async function evalRun(out: string) {
  const run = await runCli(['eval', suiteFile, '--out', out, '--concurrency', '2'])
  const json = fs.readdirSync(out).filter((f) => f.endsWith('.json')).sort()
  return { ...run, json }
}

test('a suite with a failing case exits 1 and writes the table, JSON and JUnit XML; a second run\'s HTML shows both runs', async () => {
  const out = path.join(work, 'runs')
  const calls = server.calls
  const first = await evalRun(out)
  expect(first.code).toBe(1)
  expect(server.calls).toBe(calls) // recorded responses: no provider call
  expect(first.stderr).toContain('[3/3]')
  expect(first.stdout).toMatch(/pass +adds with the tool +3\/3/)
  expect(first.stdout).toMatch(/pass +answers JSON +2\/2/)
  expect(first.stdout).toMatch(/failed +uses the tool +1\/2 +toolCalls subset \[add\]: expected among the calls, in order \[add\], called \[\]/)
  expect(first.stdout).toContain('adding: 2 passed, 1 failed of 3')
  expect(first.json).toHaveLength(1)
  const result = JSON.parse(fs.readFileSync(path.join(out, first.json[0]), 'utf8')) as SuiteResult
  expect(result.cases.map((c) => c.status)).toEqual(['passed', 'passed', 'failed'])
  expect(result.cases[0].diff?.same).toBe(true)
  expect(result.score).toBeCloseTo(6 / 7)

  const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '' }).parse(fs.readFileSync(path.join(out, first.json[0].replace(/\.json$/, '.xml')), 'utf8'))
  const suite = xml.testsuites.testsuite
  expect(suite).toMatchObject({ name: 'adding', tests: '3', failures: '1', errors: '0' })
  expect(suite.testcase.map((c: { name: string }) => c.name)).toEqual(['adds with the tool', 'answers JSON', 'uses the tool'])
  expect(suite.testcase[2].failure.message).toContain('toolCalls subset [add]')

  const second = await evalRun(out)
  expect(second.code).toBe(1)
  expect(second.json).toHaveLength(2)
  const html = fs.readFileSync(path.join(out, second.json[1].replace(/\.json$/, '.html')), 'utf8')
  expect(html).toContain('score across runs (2)')
  expect(html).not.toMatch(/<(script|link|img)\b/)
})

browserTest('the HTML report opens in Chromium with each case\'s trajectory diff and score chart, and the runs chart', async () => {
  const out = path.join(work, 'browser-runs')
  await evalRun(out)
  const { json } = await evalRun(out)
  const page = path.join(out, json[1].replace(/\.json$/, '.html'))
  const browser = await chromium.launch({ executablePath: binary.executablePath })
  try {
    const tab = await browser.newPage()
    await tab.goto(`file://${page}`)
    expect(await tab.locator('section.case').count()).toBe(3)
    expect(await tab.locator('pre.diff').first().isVisible()).toBe(true)
    expect(await tab.locator('pre.diff').first().textContent()).toContain('The sum is 3.')
    const bars = tab.locator('section.case').nth(2).locator('svg.scores rect')
    expect(await bars.count()).toBe(2)
    expect((await bars.nth(0).boundingBox())!.width).toBeGreaterThan(0)
    expect(await tab.locator('#history circle.run').count()).toBe(2)
    expect(await tab.locator('#history').isVisible()).toBe(true)
    const shots = path.join(work, 'screenshots')
    fs.mkdirSync(shots)
    await tab.screenshot({ path: path.join(shots, 'eval-report.png'), fullPage: true })
    expect(fs.statSync(path.join(shots, 'eval-report.png')).size).toBeGreaterThan(1000)
  } finally {
    await browser.close()
  }
})
