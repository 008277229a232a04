/**
 * The tools of the human-in-the-loop crash tests (steer-kill): in the child that is killed
 * (`TURNCHART_CHILD` set) they never return; in the engine that recovers, they do. Both are
 * idempotent, so recovery runs an interrupted call again, with the input it was approved with.
 * `book` records each booking in the file `TURNCHART_SIDE_EFFECTS` names.
 */
import fs from 'node:fs'
import { tool } from 'ai'
import { z } from 'zod'
import { idempotent } from '../../src/tools/tool-options'

const inChild = () => process.env.TURNCHART_CHILD !== undefined

export const hitlTools = {
  notes: idempotent(tool({ description: 'Read the notes', inputSchema: z.object({}), execute: async () => (inChild() ? new Promise<string>(() => {}) : 'the notes') })),
  book: idempotent(
    tool({
      description: 'Book a room',
      inputSchema: z.object({ room: z.enum(['small', 'large']) }),
      needsApproval: true,
      execute: async ({ room }) => {
        if (inChild()) return new Promise<string>(() => {})
        fs.appendFileSync(process.env.TURNCHART_SIDE_EFFECTS!, `booked ${room}\n`)
        return `booked the ${room} room`
      },
    }),
  ),
}
