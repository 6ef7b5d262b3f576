import cors from '@fastify/cors'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Config } from './config/config.js'
import type { DatabaseHandle } from './db/database.js'
import { clientErrorHandler } from './http/client-error.js'
import { registerDrain } from './http/drain.js'
import { frameworkErrors, registerErrorHandler } from './http/error-handler.js'
import { registerJsonBody } from './http/json-body.js'
import { registerRateLimit } from './http/rate-limit.js'
import { genReqId } from './http/request-id.js'
import { registerNotFound } from './http/routing.js'
import { registerValidation } from './http/validation.js'
import { orderRoutes } from './orders/order.routes.js'
import { postRoutes } from './posts/post.routes.js'
import { productRoutes } from './products/product.routes.js'
import { registerMetrics } from './service/metrics.js'
import { serviceRoutes } from './service/service.routes.js'
import { VERSION } from './service/version.js'
import { sessionRoutes } from './sessions/session.routes.js'
import { userRoutes } from './users/user.routes.js'

export interface AppOptions {
  config: Config
  database: DatabaseHandle
  logger?: FastifyServerOptions['logger']
}

// Builds the application; it does not listen (server.ts does). Tests build it the same way.
export async function buildApp ({ config, database, logger }: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: logger ?? {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie']
    },
    genReqId,
    bodyLimit: config.bodyLimitBytes,
    // Time limits (docs/RELIABILITY.md): the request line and headers within 10 s, the whole
    // request (body included) within 30 s, else 408; checked every second, so a limit means
    // what it says (Node's default check runs every 30 s). A silent socket is dropped after 60 s;
    // an idle keep-alive connection after 72 s, longer than common balancers' 60 s, so the
    // balancer closes first.
    requestTimeout: 30_000,
    http: { headersTimeout: 10_000, connectionsCheckingInterval: 1000 },
    connectionTimeout: 60_000,
    keepAliveTimeout: 72_000,
    // Answers the HTTP layer gives before a request exists (408, 400, 414, 431) in our body.
    clientErrorHandler,
    // The client address (request.ip) comes from X-Forwarded-For only when the peer is one of
    // the proxies named in TRUST_PROXY; otherwise it is the TCP peer.
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    // While closing, requests get our 503 from the drain hooks (http/drain.ts), not Fastify's own body.
    return503OnClosing: false,
    // Errors of the router itself (a path that is not valid percent-encoding) in the contract's
    // body too. Parameters may be as long as a URL can be, so that an over-long id is a 400 on
    // its own field (`id`) rather than the router's bare 414.
    frameworkErrors,
    routerOptions: { maxParamLength: 16_384 }
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('config', config)
  app.decorate('db', database.db)
  app.decorate('dialect', database.dialect)
  app.decorateRequest('user', null)
  app.decorateRequest('sessionTokenHash', null)

  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id)
  })
  registerDrain(app)
  app.addHook('onClose', async () => { await database.db.destroy() })

  registerErrorHandler(app)
  registerNotFound(app)
  // CORS before the other hooks that can answer early, so that a 429 from the rate limit (and
  // every other error) still carries the CORS headers a browser needs to read it. Not strict
  // about preflights: a plain OPTIONS (no Origin) gets 204 rather than the plugin's text/plain 400.
  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: config.corsOrigins,
      strictPreflight: false,
      exposedHeaders: ['Location', 'ETag', 'Link', 'X-Request-Id', 'Retry-After', 'RateLimit', 'RateLimit-Policy', 'Idempotent-Replayed']
    })
  }
  registerJsonBody(app)
  registerValidation(app)
  registerRateLimit(app, config.rateLimitPerMinute)

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

  await app.register(serviceRoutes)
  registerMetrics(app)
  await app.register(async (v1) => {
    await v1.register(userRoutes)
    await v1.register(sessionRoutes)
    await v1.register(postRoutes)
    await v1.register(productRoutes)
    await v1.register(orderRoutes)
  }, { prefix: '/v1' })

  return app
}
