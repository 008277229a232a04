/**
 * The `model` option's type: `npm run typecheck` (the first step of `npm test`) checks this file, so a wrong line fails the suite.
 * (With ai v7 in an app, `LanguageModelV4` is accepted too: test/compat-v7 type-checks that.)
 */
import type { LanguageModelV2, LanguageModelV3 } from '@ai-sdk/provider'
import { isSupportedModel, type EngineModel } from '../../src'

// Checked by the compiler only (never called).
export function typeChecks(v3: LanguageModelV3, v2: LanguageModelV2): EngineModel[] {
  const accepted: EngineModel = v3
  // @ts-expect-error a V2 model (ai v5 providers) is refused
  const v2Refused: EngineModel = v2
  // @ts-expect-error a model id string (the AI SDK gateway) is refused
  const idRefused: EngineModel = 'openai/gpt-5'
  return [accepted, v2Refused, idRefused]
}

test('isSupportedModel: V3 and V4 model objects; not V2', () => {
  expect(isSupportedModel({ specificationVersion: 'v3', provider: 'p', modelId: 'm', doStream: () => undefined })).toBe(true)
  expect(isSupportedModel({ specificationVersion: 'v4', provider: 'p', modelId: 'm', doStream: () => undefined })).toBe(true)
  expect(isSupportedModel({ specificationVersion: 'v2', provider: 'p', modelId: 'm', doStream: () => undefined })).toBe(false)
})
