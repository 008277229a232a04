/**
 * A PostgreSQL URL's password never reaches the CLI's output (issue 26's threat table): a read
 * command whose server does not answer names the database by its URL without the password.
 */
import net from 'node:net'
import { runCli } from './run-cli'

test('a failing postgres:// database is named without its password', async () => {
  // A port nothing listens on: the connection is refused at once.
  const probe = net.createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as net.AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  const run = await runCli(['sessions', `postgres://turnchart:s3cr3t-pa55word@127.0.0.1:${port}/app`])
  expect(run.code).toBe(1)
  expect(run.stderr).toContain(`127.0.0.1:${port}`)
  expect(`${run.stdout}${run.stderr}`).not.toContain('s3cr3t-pa55word')
}, 30_000)
