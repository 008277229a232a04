/** examples/mcp/mcp.ts against its real MCP server: the read runs, the deploy waits for approval and runs once. */
import { runMcpExample } from '../../examples/mcp/mcp'

test('the MCP example reads without approval, deploys once after approval, and completes', async () => {
  expect(await runMcpExample()).toEqual([
    'tools: read_page, deploy',
    'approval asked: deploy {"env":"production"}',
    'read_page: # /status',
    'deploy: deployed to production',
    'outcome: completed; deploys: 1',
  ])
})
