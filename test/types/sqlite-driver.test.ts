/**
 * turnchart declares the part of better-sqlite3 it uses (src/store/sqlite/sqlite-driver.ts)
 * instead of naming `@types/better-sqlite3` in its published types. `npm run typecheck` checks
 * here that the real module fits that declaration; the test checks the members it names
 * behave as declared.
 */
import Database from 'better-sqlite3'
import type { SqliteDriver } from '../../src/store/sqlite/sqlite-driver'
import { sqliteLoader } from '../../src/store/sqlite/open-sqlite'

// Checked by the compiler: better-sqlite3's own types are assignable to the declared driver.
const driver: SqliteDriver = Database

test('the loaded driver is better-sqlite3, and the members turnchart declares behave as declared', () => {
  expect(sqliteLoader.load()).toBe(driver)
  const db = new driver(':memory:')
  try {
    db.pragma('foreign_keys = ON')
    expect(db.pragma('foreign_keys')).toEqual([{ foreign_keys: 1 }])
    const insert = db.prepare('create table t (x integer)')
    expect(insert.reader).toBe(false)
    insert.run([])
    expect(db.prepare('insert into t values (?), (?)').run([1, 2])).toMatchObject({ changes: 2 })
    const select = db.prepare('select x from t order by x')
    expect(select.reader).toBe(true)
    expect(select.all([])).toEqual([{ x: 1 }, { x: 2 }])
    const rows = select.iterate([])
    expect(rows.next().value).toEqual({ x: 1 })
    expect(select.busy).toBe(true)
    rows.return?.()
    expect(select.busy).toBe(false)
  } finally {
    db.close()
  }
})
