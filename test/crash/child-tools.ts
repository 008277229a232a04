/**
 * The tools of the crash tests' engines (the child that is killed and the engines that recover
 * its turn): one that never returns, and an idempotent one that recovery runs again. A module
 * of its own, so that importing them starts no child's main.
 */
import { tool } from 'ai'
import { z } from 'zod'
import { idempotent } from '../../src/tools/tool-options'

export const childTools = {
  /** Never returns: the process dies while it runs. */
  deploy: tool({ description: 'Deploy', inputSchema: z.object({ env: z.string() }), execute: () => new Promise<string>(() => {}) }),
  /** Idempotent: recovery runs it again. */
  read: idempotent(
    tool({ description: 'Read a file', inputSchema: z.object({ path: z.string() }), execute: async ({ path }) => (process.env.TURNCHART_CHILD ? new Promise<string>(() => {}) : `contents of ${path}`) }),
  ),
}
