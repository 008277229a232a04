/**
 * A 10 MB answer, then three readers of the turn's streams and a chat handler: the heap grows by
 * at most 25 MB over the answer's own size (the answer is held once, in its part; readers that
 * start late replay from it). Measured in a child process run with `--expose-gc`, after full
 * collections: a figure, not a timing.
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { nodeEntry } from '../support/compiled'

test('a 10 MB answer read by a chat handler and three late stream readers raises heapUsed by at most 25 MB over its size', async () => {
  const { file, execArgv } = nodeEntry(path.join(__dirname, 'part-stream-memory-child.ts'))
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(process.execPath, ['--expose-gc', ...execArgv, file], { maxBuffer: 1024 * 1024 }, (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out))),
  )
  const measured = JSON.parse(stdout.trim().split('\n').at(-1)!) as { outcome: string; textLength: number; answerBytes: number; before: number; after: number; page: number; read: number[] }
  expect(measured.outcome).toBe('completed')
  expect(measured.textLength).toBe(measured.answerBytes)
  expect(measured.answerBytes).toBeGreaterThanOrEqual(10_000_000)
  // Every reader got the whole answer (the UI ones as JSON, a little more).
  for (const chars of [measured.page, ...measured.read]) expect(chars).toBeGreaterThanOrEqual(measured.answerBytes)
  const growth = measured.after - measured.before
  expect(growth - measured.answerBytes).toBeLessThanOrEqual(25 * 1024 * 1024)
}, 120_000)
