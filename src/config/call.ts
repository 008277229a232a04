/** `settings` (the default call settings of every turn), `system`, `maxSteps`, `limits` and `maxFileBytes`. */
import type { Budget, StopCondition, StructuredOutput, TurnSettings } from '../core/types'
import { validateBudget } from '../policy/budget'
import { InvalidOptionError } from '../core/errors'
import type { ModelLimits } from '../policy/overflow'
import type { StepRule } from '../policy/step-gate'
import { stopConditions, structuredOutput, validateTurnSettings } from './call-settings'
import type { EngineOptions } from './options'
import { nonNegativeInteger, optionGroup } from './option-values'

export function resolveCall(options: EngineOptions): {
  call: Omit<TurnSettings, 'maxSteps'>
  system: string | undefined
  maxSteps: number | undefined
  budget: Budget | undefined
  stopWhen: StopCondition[]
  stepRules: readonly StepRule[]
  output: StructuredOutput | undefined
  limits: ModelLimits | undefined
  maxFileBytes: number
} {
  const settings = optionGroup('settings', options.settings) as Omit<TurnSettings, 'maxSteps'>
  validateTurnSettings('settings', settings, (name, value, expected) => new InvalidOptionError(name, value, expected))
  if ('maxSteps' in settings) throw new InvalidOptionError('settings.maxSteps', settings.maxSteps, 'the top-level option maxSteps')
  let limits: ModelLimits | undefined
  if (options.limits !== undefined) {
    const raw = optionGroup('limits', options.limits, ['context', 'output'])
    limits = { context: nonNegativeInteger('limits.context', raw.context, 0), output: nonNegativeInteger('limits.output', raw.output, 0) }
  }
  if (options.system !== undefined && typeof options.system !== 'string') throw new InvalidOptionError('system', options.system, 'a string')
  return {
    // The model's output limit is the default `maxOutputTokens`; the app's settings win.
    call: { ...(limits && limits.output > 0 ? { maxOutputTokens: limits.output } : {}), ...settings },
    system: options.system,
    maxSteps: (options.maxSteps as unknown) === null ? undefined : nonNegativeInteger('maxSteps', options.maxSteps, 100, 1),
    budget: options.budget === undefined ? undefined : validateBudget('budget', options.budget, (name, value, expected) => new InvalidOptionError(name, value, expected)),
    stopWhen: stopConditions('stopWhen', options.stopWhen, (name, value, expected) => new InvalidOptionError(name, value, expected)),
    stepRules: stepRules(options.stepRules),
    output: structuredOutput('output', options.output, (name, value, expected) => new InvalidOptionError(name, value, expected)),
    limits,
    maxFileBytes: nonNegativeInteger('maxFileBytes', options.maxFileBytes, 10_000_000, 0),
  }
}

/** `stepRules`: an array of `{ name, decide }`, names unique. */
function stepRules(value: unknown): readonly StepRule[] {
  if (value === undefined) return []
  const expected = 'an array of { name: string, decide(input) } with unique names'
  if (!Array.isArray(value)) throw new InvalidOptionError('stepRules', value, expected)
  const names = new Set<string>()
  value.forEach((rule: unknown, i) => {
    const ok = typeof rule === 'object' && rule !== null && typeof (rule as StepRule).name === 'string' && typeof (rule as StepRule).decide === 'function'
    if (!ok || names.has((rule as StepRule).name)) throw new InvalidOptionError(`stepRules[${i}]`, rule, expected)
    names.add((rule as StepRule).name)
  })
  return Object.freeze([...(value as StepRule[])])
}
