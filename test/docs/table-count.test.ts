/**
 * The docs count turnchart's tables as a migrated database has them: docs/deployment.md names
 * the number and each table.
 */
import fs from 'node:fs'
import path from 'node:path'
import Database from 'better-sqlite3'
import { openStore } from '../../src/engine/open-store'
import { tempDbPath } from '../support/harness'

const root = path.resolve(__dirname, '../..')
const words = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve']

test('docs/deployment.md names as many turnchart_ tables as a migrated database has, and each of them', async () => {
  const file = tempDbPath()
  try {
    const opened = await openStore(file)
    await opened.close()
    const db = new Database(file, { readonly: true })
    const tables = (db.prepare("select name from sqlite_master where type = 'table' and name like 'turnchart\\_%' escape '\\'").all() as Array<{ name: string }>).map((t) => t.name)
    db.close()
    expect(tables.length).toBeGreaterThan(0)

    const deployment = fs.readFileSync(path.join(root, 'docs/deployment.md'), 'utf8')
    const intro = deployment.slice(0, deployment.indexOf('\n## '))
    expect(intro).toContain(`${words[tables.length]} tables prefixed \`turnchart_\``)
    // Each table by its name without the prefix (transitions: "transitions (each turn's log)").
    expect(tables.map((t) => t.slice('turnchart_'.length)).filter((name) => !intro.includes(name))).toEqual([])
    for (const document of ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]) {
      const text = fs.readFileSync(path.join(root, document), 'utf8')
      const counts = [...text.matchAll(/\b(\w+) tables prefixed/g)].map((m) => m[1])
      expect({ document, counts: counts.filter((word) => word !== words[tables.length]) }).toEqual({ document, counts: [] })
    }
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true })
  }
})
