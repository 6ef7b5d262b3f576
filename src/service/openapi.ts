import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { VERSION } from './version.js'

// The OpenAPI document, generated from the route schemas (its onRoute hook collects them, so it
// is registered before any route), and the interactive reference at /docs.
export const openapi = fp(async (app) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Resource API',
        version: VERSION,
        description: 'Users, sessions, posts, products and orders. Every error has the same body: `{type, title, status, code, message, requestId}` (plus `errors[]` for VALIDATION_ERROR); branch on `code`.'
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'A token from POST /v1/sessions.' } } }
    }
  })
  await app.register(swaggerUi, { routePrefix: '/docs' })
}, { name: 'openapi', dependencies: ['routing'] })
