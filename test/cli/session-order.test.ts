/**
 * Sessions are listed oldest first (creation time, then id), not by id: with the random ids
 * `useChat` generates, created in an order that is not alphabetical, `engine.listSessions()`,
 * `turnchart sessions` (a child process) and the viewer's GET /api/sessions all list them in
 * the order they were created.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createEngine } from '../../src'
import { startScriptedServer } from '../../src/testing'
import { startViewer } from '../../src/viewer/viewer-server'
import { modelFor, tempDbPath } from '../support/harness'
import { runCli } from './run-cli'

/** Ids as useChat makes them, in creation order: neither alphabetical nor its reverse. */
const ids = ['zR8kQ2mPw9LcT4vB', 'A3fG7hJ2kL9mN4pQ', 'm5XyZ1aB2cD3eF4g', '0qW3eR5tY7uI9oP1']

/** Resolves once the clock has moved past `since`, so the next session has a later creation time. */
async function clockPast(since: number): Promise<void> {
  while (Date.now() <= since) await new Promise((resolve) => setImmediate(resolve))
}

let dbPath: string
afterEach(() => fs.rmSync(path.dirname(dbPath), { recursive: true, force: true }))

test('listSessions, turnchart sessions and GET /api/sessions list sessions in creation order, not by id', async () => {
  expect([...ids].sort()).not.toEqual(ids)
  dbPath = tempDbPath()
  const server = await startScriptedServer()
  const engine = await createEngine({ database: dbPath, model: modelFor(server) })
  try {
    for (const id of ids) {
      const session = await engine.createSession({ id })
      await clockPast(session.time.created)
    }
    expect((await engine.listSessions()).map((s) => s.id)).toEqual(ids)
  } finally {
    await engine.close()
    await server.close()
  }

  const json = await runCli(['sessions', dbPath, '--json'])
  expect(json.stderr).toBe('')
  expect(JSON.parse(json.stdout).map((s: { id: string }) => s.id)).toEqual(ids)
  const text = await runCli(['sessions', dbPath])
  expect(text.stdout.trim().split('\n').map((line) => line.split(/\s+/)[0])).toEqual(ids)

  const viewer = await startViewer({ database: dbPath })
  try {
    const listed = (await (await fetch(`${viewer.url}api/sessions`)).json()) as Array<{ id: string }>
    expect(listed.map((s) => s.id)).toEqual(ids)
  } finally {
    await viewer.close()
  }
})
