/** The chat handler tests' tool that needs approval: `deploy({ env })`, with the environments it really deployed to. */
import { tool } from 'ai'
import { z } from 'zod'

export function deployTool() {
  const deployed: string[] = []
  const deploy = tool({
    description: 'Deploy',
    inputSchema: z.object({ env: z.string() }),
    needsApproval: true,
    execute: async ({ env }) => {
      deployed.push(env)
      return `deployed to ${env}`
    },
  })
  return { deploy, deployed }
}
