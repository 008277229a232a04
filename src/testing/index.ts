/** Test helpers shipped as `turnchart/testing`. */
export * from './scripted-server'
