/** `turnchart chart` prints the machine itself: Mermaid, or its JSON definition. */
import { turnMachine } from '../../machines/turn.machine'
import { toMermaid } from '../../src/chart/chart-edges'
import { runCli } from './run-cli'

test('chart prints the Mermaid diagram generated from the machine', async () => {
  const run = await runCli(['chart'])
  expect(run.code).toBe(0)
  expect(run.stdout.trim()).toBe(toMermaid(turnMachine))
  expect(run.stdout).toMatch(/^stateDiagram-v2\n/)
  expect(run.stdout).toContain('idle --> running: turn.start')
  expect(run.stdout).toContain('running --> interrupted: turn.crashed')
}, 60_000)

test('chart --json prints the machine definition for the Stately editor', async () => {
  const run = await runCli(['chart', '--json'])
  expect(run.code).toBe(0)
  const definition = JSON.parse(run.stdout)
  expect(definition.id).toBe(turnMachine.id)
  expect(Object.keys(definition.states).sort()).toEqual(Object.keys(turnMachine.root.states).sort())
  expect(definition.states.idle.on['turn.start'][0].target).toEqual(['#turn.running'])
  expect(Object.keys(definition.states.running.states.step.states)).toEqual(['streaming', 'retry-waiting', 'throttled'])
}, 60_000)
