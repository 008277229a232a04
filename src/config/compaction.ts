/** `compaction`: automatic or not, the tokens kept for the answer, the loop guard, the summary instruction. */
import { InvalidOptionError } from '../core/errors'
import type { EngineOptions } from './options'
import { booleanOption, nonNegativeInteger, optionGroup } from './option-values'

const defaultSummaryPrompt =
  'Summarise the conversation so far for a continuation of it: the goal, what was done, ' +
  'the facts and decisions that matter, tool results still needed, and what remains to do. ' +
  'Be concise and complete; the earlier messages will be dropped.'

export function resolveCompaction(options: EngineOptions): { auto: boolean; reserved: number | undefined; maxPerTurn: number; prompt: string } {
  const compaction = optionGroup('compaction', options.compaction, ['auto', 'reserved', 'maxPerTurn', 'prompt'])
  if (compaction.prompt !== undefined && (typeof compaction.prompt !== 'string' || compaction.prompt.length === 0)) {
    throw new InvalidOptionError('compaction.prompt', compaction.prompt, 'a non-empty string')
  }
  return {
    auto: booleanOption('compaction.auto', compaction.auto, true),
    reserved: compaction.reserved === undefined ? undefined : nonNegativeInteger('compaction.reserved', compaction.reserved, 0),
    maxPerTurn: nonNegativeInteger('compaction.maxPerTurn', compaction.maxPerTurn, 2),
    prompt: (compaction.prompt as string | undefined) ?? defaultSummaryPrompt,
  }
}
