import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { componentSchemas } from './components.js'
import { swaggerOptions } from './openapi-document.js'

// The OpenAPI document, generated from the route schemas (its onRoute hook collects them, so it
// is registered before any route), and the interactive reference at /docs. The named schemas
// are added here, once, before the routes that reference them (see components.ts).
export const openapi = fp(async (app) => {
  for (const schema of componentSchemas) app.addSchema(schema)
  await app.register(swagger, swaggerOptions)
  await app.register(swaggerUi, { routePrefix: '/docs' })
}, { name: 'openapi', dependencies: ['routing'] })
