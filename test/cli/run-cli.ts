/** Runs the CLI from source as a child process (ts-node, transpile only), like `npm run demo`. */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { cliArgs } from '../support/compiled'

export const root = path.resolve(__dirname, '../..')

export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 30_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...cliArgs(), ...args], {
      cwd: root,
      env: { ...process.env, NO_COLOR: '1', TURNCHART_BASE_URL: '', TURNCHART_MODEL: '', TURNCHART_API_KEY: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`turnchart ${args.join(' ')} did not exit within ${timeoutMs} ms\n${stdout}\n${stderr}`))
    }, timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}
