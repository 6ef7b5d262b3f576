import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { DOCS_CSP } from '../pipeline/security-headers.js'
import { componentSchemas } from './components.js'
import { swaggerOptions } from './openapi-document.js'

// The OpenAPI document, generated from the route schemas (its onRoute hook collects them, so it
// is registered before any route), and the interactive reference at /docs. The named schemas
// are added here, once, before the routes that reference them (see components.ts).
export const openapi = fp(async (app) => {
  for (const schema of componentSchemas) app.addSchema(schema)
  await app.register(swagger, swaggerOptions)
  // The reference page loads only from this origin (DOCS_CSP); Swagger UI's validator badge,
  // which would send the document to a public service, stays off (its default here).
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: DOCS_CSP })
}, { name: 'openapi', dependencies: ['unknown-routes'] })
