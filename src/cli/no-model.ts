/**
 * The model of the CLI's writing commands: an AI SDK language model object that refuses to
 * run. `recover` ends turns without calling a model and `prune` deletes rows, so a request
 * reaching it is a bug; being an object (not a model id string) it can never resolve to a
 * hosted gateway.
 */
import type { EngineModel } from '../config/options'

export function noModel(command: string): EngineModel {
  const refuse = async (): Promise<never> => {
    throw new Error(`turnchart ${command} does not call a model`)
  }
  return {
    specificationVersion: 'v3',
    provider: 'turnchart-cli',
    modelId: 'none',
    supportedUrls: {},
    doGenerate: refuse,
    doStream: refuse,
  } as unknown as EngineModel
}
