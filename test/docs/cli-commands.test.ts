/**
 * docs/cli.md lists every command `turnchart help` prints (issue 74): the help's command names,
 * read from its text, each in the page's command block as `turnchart <command>`.
 */
import fs from 'node:fs'
import path from 'node:path'
import { usage } from '../../src/cli/main'

const page = fs.readFileSync(path.resolve(__dirname, '../../docs/cli.md'), 'utf8')
const block = /```sh\n([\s\S]*?)```/.exec(page)![1]

/** The commands of the help: each line that starts a command (two spaces, then its name). */
const commands = [...usage.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((match) => match[1])

test('the help was read: its commands, demo and eval among them', () => {
  expect(commands).toEqual(expect.arrayContaining(['demo', 'chart', 'sessions', 'show', 'eval', 'recover', 'prune']))
})

test('docs/cli.md lists every command turnchart help prints', () => {
  expect(commands.filter((command) => !new RegExp(`^turnchart ${command}\\b`, 'm').test(block))).toEqual([])
})
