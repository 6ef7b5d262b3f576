import { apiKeyRoutes } from './api-keys/api-key.routes.js'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Config } from './config/config.js'
import type { DatabaseHandle } from './db/database.js'
import { database as databasePlugin } from './db/database.plugin.js'
import { notifications } from './db/notifications.plugin.js'
import { clientErrorHandler } from './pipeline/client-error.js'
import { cors } from './pipeline/cors.js'
import { drain } from './pipeline/drain.js'
import { errorHandler, frameworkErrors } from './pipeline/error-handler.js'
import { jsonBody } from './pipeline/json-body.plugin.js'
import { FastReads, fastReadServer, fastReads } from './pipeline/fast-reads.js'
import { rateLimit } from './pipeline/rate-limit.js'
import { genReqId } from './pipeline/request-id.js'
import { requestHooks } from './pipeline/request-hooks.js'
import { routePlans } from './pipeline/route-plan.js'
import { silentConnections } from './pipeline/silent-connections.js'
import { lazyChildLogger } from './pipeline/lazy-logger.js'
import { RequestLog } from './pipeline/request-log.js'
import { sharedSerializers } from './pipeline/serializers.js'
import { unknownRoutes } from './pipeline/unknown-routes.js'
import { validation } from './pipeline/validation.js'
import { orderRoutes } from './orders/order.routes.js'
import { postRoutes } from './posts/post.routes.js'
import { productRoutes } from './products/product.routes.js'
import { metrics } from './service/metrics.js'
import { openapi } from './service/openapi.js'
import { serviceRoutes } from './service/service.routes.js'
import { accessOf } from './auth/scopes.js'
import { authentication, countedByKey } from './auth/authentication.js'
import { sessionRoutes } from './sessions/session.routes.js'
import { signInRoutes } from './sign-in/sign-in.routes.js'
import { userRoutes } from './users/user.routes.js'
import { eventRoutes } from './events/event.routes.js'
import { webhookDispatcher } from './webhooks/dispatcher.plugin.js'
import { webhookRoutes } from './webhooks/webhook.routes.js'
import { accountRoutes } from './accounts/account.routes.js'
import { accountPages } from './accounts/account-pages.js'
import { mailSender } from './mail/mail-sender.plugin.js'
import { accountMail } from './accounts/account-mail.js'
import { siteName } from './accounts/account-links.js'
import { identityProviders } from './oidc/identity-providers.plugin.js'
import { oidcRoutes } from './oidc/oidc.routes.js'
import { secretBox } from './mfa/secret-box.plugin.js'
import { mfaRoutes } from './mfa/mfa.routes.js'
import { files } from './files/files.plugin.js'
import { fileRoutes } from './files/file.routes.js'
import { productImageRoutes } from './products/product-image.routes.js'
import { postImageRoutes } from './posts/post-image.routes.js'
import { avatarRoutes } from './users/avatar.routes.js'
import { systemRoutes } from './system/system.routes.js'
import { consolePages } from './console/console.plugin.js'

export interface AppOptions {
  config: Config
  database: DatabaseHandle
  logger?: FastifyServerOptions['logger']
}

// Builds the application; it does not listen (server.ts does). Tests build it the same way.
// Each cross-cutting piece is a named plugin that declares the plugins it must follow, so a
// registration out of order fails at start-up instead of changing behaviour silently.
// Time limits (docs/RELIABILITY.md): the request line and headers within 10 s, the whole
// request (body included) within 30 s, else 408; checked every second, so a limit means
// what it says (Node's default check runs every 30 s). A silent socket is dropped after 60 s;
// an idle keep-alive connection after 72 s, longer than common balancers' 60 s, so the
// balancer closes first.
const TIME_LIMITS = {
  requestTimeout: 30_000,
  http: { headersTimeout: 10_000, connectionsCheckingInterval: 1000 },
  connectionTimeout: 60_000,
  keepAliveTimeout: 72_000
}

export async function buildApp ({ config, database, logger }: AppOptions): Promise<FastifyInstance> {
  const accessLog = new RequestLog()
  const fastPath = new FastReads()
  const app = Fastify({
    // Never no logger at all (`false`), only a silent one: the request metrics are recorded with
    // the access line by the log controller, which Fastify calls only when a logger exists.
    logger: logger === false
      ? { level: 'silent' }
      : logger ?? {
        level: config.logLevel,
        redact: ['req.headers.authorization', 'req.headers.cookie']
      },
    genReqId,
    // One line per request instead of Fastify's two: see pipeline/request-log.ts.
    logController: accessLog,
    // request.log becomes pino's child only when something is logged through it.
    childLoggerFactory: lazyChildLogger,
    bodyLimit: config.bodyLimitBytes,
    ...TIME_LIMITS,
    // The HTTP server Fastify would make, with these limits, whose request listener lets the
    // anonymous reads by id be answered first (pipeline/fast-reads.ts).
    serverFactory: fastReadServer(fastPath, TIME_LIMITS),
    // Answers the HTTP layer gives before a request exists (408, 400, 414, 431) in our body.
    clientErrorHandler,
    // The client address (request.ip) comes from X-Forwarded-For only when the peer is one of
    // the proxies named in TRUST_PROXY; otherwise it is the TCP peer.
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    // While closing, requests get our 503 from the drain plugin (pipeline/drain.ts), not Fastify's own body.
    return503OnClosing: false,
    // Errors of the router itself (a path that is not valid percent-encoding) in our error
    // body too. Parameters may be as long as a URL can be, so that an over-long id is a 400 on
    // its own field (`id`) rather than the router's bare 414.
    frameworkErrors,
    routerOptions: { maxParamLength: 16_384 },
    // Each distinct response schema compiled once per process, not once per route and status
    // (pipeline/serializers.ts): most of the start-up's time, and of every test's app, went there.
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } }
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.decorate('config', config)
  app.decorate('accessLog', accessLog)
  // Filled by server.ts once replication runs; read by GET /v1/system.
  app.decorate('replicationReport', {})
  await app.register(errorHandler)
  await app.register(drain)
  await app.register(silentConnections)
  await app.register(databasePlugin, { database })
  await app.register(notifications)
  await app.register(routePlans, { accessOf })
  await app.register(unknownRoutes)
  await app.register(cors, { origins: config.corsOrigins })
  await app.register(jsonBody)
  await app.register(validation)
  await app.register(rateLimit, { perMinute: config.rateLimitPerMinute, countedElsewhere: countedByKey })
  // One hook per phase for every route (pipeline/request-hooks.ts).
  await app.register(requestHooks, { trustProxy: config.trustProxy.length > 0 })
  await app.register(fastReads, { fastPath, trustProxy: config.trustProxy })
  await app.register(openapi)
  await app.register(metrics)
  await app.register(authentication)

  await app.register(serviceRoutes)
  await app.register(identityProviders)
  await app.register(secretBox)
  await app.register(files)
  for (const routes of [userRoutes, accountRoutes, signInRoutes, sessionRoutes, postRoutes, productRoutes, orderRoutes, eventRoutes, webhookRoutes, apiKeyRoutes, oidcRoutes, mfaRoutes, fileRoutes, productImageRoutes, postImageRoutes, avatarRoutes, systemRoutes]) {
    await app.register(routes, { prefix: '/v1' })
  }
  await app.register(accountPages)
  await app.register(consolePages)
  await app.register(webhookDispatcher)
  await app.register(mailSender, { compose: accountMail(database.db, config), site: siteName(config) })
  return app
}
