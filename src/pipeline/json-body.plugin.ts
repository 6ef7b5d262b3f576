import fp from 'fastify-plugin'
import { registerJsonBody } from './json-body.js'

// The JSON body parser (json-body.ts) as a named plugin. After routing: the body's phase
// (request-hooks.ts) answers an unknown route or method (404/405) before the parser's checks can
// turn it into a 415, 413 or 400.
export const jsonBody = fp(async (app) => { registerJsonBody(app) }, { name: 'json-body', dependencies: ['error-handler', 'unknown-routes'] })
