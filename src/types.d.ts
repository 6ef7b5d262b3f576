import type { Config } from './config/config.js'
import type { Db } from './db/schema.js'
import type { DialectName } from './db/database.js'
import type { CurrentUser } from './sessions/authentication.js'
import type { MetricsListener } from './service/metrics-listener.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    db: Db
    dialect: DialectName
    /** The private /metrics listener; server.ts starts it (METRICS_PORT), the app closes it. */
    metricsListener: MetricsListener
  }
  interface FastifyRequest {
    /** The logged-in caller, set by the `authenticate` hook on routes that need one. */
    user: CurrentUser | null
    /** The hash of the caller's bearer token (its session), set with `user`. */
    sessionTokenHash: string | null
  }
}
