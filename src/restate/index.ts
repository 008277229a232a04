/**
 * `turnchart/restate`: turns run on Restate, a virtual object per session (docs/deployment.md).
 * Needs Node 22 and `@restatedev/restate-sdk` 1.17 (the app's dependency).
 */
export { createRestateService, createRestateServiceWith, type RestateService, type RestateSdk, type RestateServiceOptions, type RestatePrompt, type RestateTurnHandlers, type RestateTurnResult, type RestateSessionStatus } from './restate-service'
