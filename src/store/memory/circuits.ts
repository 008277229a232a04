/** Models' circuits in memory: a row per model, written by compare-and-set on its version (calls run one at a time). */
import type { CircuitRecord, CircuitStore } from '../store'
import type { Access } from './access'
import type { TableChanges } from '../table-changes'
import { compareIds } from './tables'

export class MemoryCircuits implements CircuitStore {
  constructor(
    private readonly db: Access,
    private readonly changes: TableChanges,
  ) {}

  changeMark(): string | number | undefined {
    return this.changes.mark()
  }

  get(model: string): Promise<CircuitRecord | undefined> {
    return this.db.run((t) => {
      const row = t.circuits.get(model)
      return row && copy(row)
    })
  }

  list(): Promise<CircuitRecord[]> {
    return this.db.run((t) => [...t.circuits.values()].sort((a, b) => compareIds(a.model, b.model)).map(copy))
  }

  put(record: CircuitRecord): Promise<boolean> {
    this.changes.storing()
    return this.db.run((t) => {
      const stored = t.circuits.get(record.model)
      if ((stored?.version ?? 0) !== record.version - 1) return false
      t.put('circuits', record.model, copy(record))
      return true
    })
  }
}

/** A row apart from the caller's (its seconds too): a caller's later edit changes nothing stored. */
const copy = (row: CircuitRecord): CircuitRecord => ({ ...row, admitted: row.admitted.map((second) => ({ ...second })) })
