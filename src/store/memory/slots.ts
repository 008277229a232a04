/** The running turns `concurrency` limits, in memory (calls run one at a time: no lock needed). */
import { parkedOwner } from '../../core/parking'
import type { SlotStore } from '../store'
import type { Access } from './access'

export class MemorySlots implements SlotStore {
  constructor(private readonly db: Access) {}

  running(tenant: string | null, exceptTurnId: string): Promise<{ total: number; tenant: number }> {
    return this.db.run((t) => {
      t.put('slots', '1', { lastTenant: tenant ?? '' })
      const running = [...t.turns.values()].filter((turn) => turn.outcome === null && turn.parentTurnId === null && turn.owner !== parkedOwner && turn.id !== exceptTurnId)
      const ofTenant = tenant === null ? 0 : running.filter((turn) => t.sessions.get(turn.sessionId)?.tenant === tenant).length
      return { total: running.length, tenant: ofTenant }
    })
  }

  servedLast(): Promise<string | undefined> {
    return this.db.run((t) => t.slots.get('1')?.lastTenant)
  }

  byTenant(): Promise<Map<string, number>> {
    return this.db.run((t) => {
      const out = new Map<string, number>()
      for (const turn of t.turns.values()) {
        if (turn.outcome !== null || turn.parentTurnId !== null || turn.owner === parkedOwner) continue
        const tenant = t.sessions.get(turn.sessionId)?.tenant ?? ''
        out.set(tenant, (out.get(tenant) ?? 0) + 1)
      }
      return out
    })
  }
}
