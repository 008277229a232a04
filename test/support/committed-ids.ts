/** What another connection sees of a SQLite file's `items` table: the committed ids, in order. */
import Database from 'better-sqlite3'

export function committedIds(file: string): string[] {
  const reader = new Database(file, { readonly: true })
  try {
    return (reader.prepare('select id from items order by id').all() as Array<{ id: string }>).map((row) => row.id)
  } finally {
    reader.close()
  }
}
