import type { Config } from './config/config.js'
import type { ReplicationReport } from './system/system.routes.js'
import type { Db } from './db/schema.js'
import type { DialectName } from './db/database.js'
import type { CallerKey, Credential, CurrentUser } from './auth/authentication.js'
import type { RateLimiter } from './pipeline/rate-limit.js'
import type { FieldError } from './http/errors.js'
import type { Registry } from 'prom-client'
import type { Notifications } from './db/notifications.js'
import type { EventStreams } from './events/event-stream.js'
import type { RequestLog } from './pipeline/request-log.js'
import type { MetricsListener } from './service/metrics-listener.js'
import type { IdentityProviders } from './oidc/identity-providers.js'
import type { SecretBox } from './mfa/secret-box.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    db: Db
    dialect: DialectName
    /** The private /metrics listener; server.ts starts it (METRICS_PORT), the app closes it. */
    metricsListener: MetricsListener
    /** The registry behind /metrics, for metrics kept outside the request path. */
    metricsRegistry: Registry
    /** PostgreSQL: the instance's LISTEN connection (db/notifications.ts); undefined on SQLite. */
    notifications: Notifications | undefined
    /** The access log (pipeline/request-log.ts), for answers Fastify does not see finish (an event stream the client closed). */
    accessLog: RequestLog
    /** The event streams open on this instance (events/event-stream.ts). */
    eventStreams: EventStreams
    /** The general rate limit's counters (pipeline/rate-limit.ts); undefined when it is off. */
    rateLimiter: RateLimiter | undefined
    /** The identity providers people may sign in with (oidc/identity-providers.ts). */
    identityProviders: IdentityProviders
    /** The key for secrets at rest (mfa/secret-box.plugin.ts); 503 when this instance has none. */
    secretBox: () => Promise<SecretBox>
    /** This instance's backup replication, once server.ts starts it (system/system.routes.ts). */
    replicationReport: ReplicationReport
  }
  interface FastifyContextConfig {
    /**
     * Rules between query parameters (minPrice ≤ maxPrice), checked with the schema's: given the
     * converted query, the failed parameters, each named once. A parameter that already failed
     * its own rule is not given to them.
     */
    queryRules?: (query: Record<string, unknown>) => FieldError[]
    /**
     * Rules on body members beyond what a schema says (a webhook URL's target), checked with the
     * schema's: given the body's members that passed their own rules, returns the failed ones.
     */
    bodyRules?: (body: Record<string, unknown>) => FieldError[]
    /**
     * The route opens event streams with a stream ticket (`?ticket=`) in place of the
     * Authorization header, when the client asks for a stream (auth/authentication.ts).
     */
    streamTickets?: boolean
  }
  interface FastifyRequest {
    /** The logged-in caller, set by the `authenticate` hook on routes that need one. */
    user: CurrentUser | null
    /** The hash of the caller's bearer token (its session), set with `user`. */
    sessionTokenHash: string | null
    /** The API key the request was made with (null for a log-in token), set with `user`. */
    apiKey: CallerKey | null
    /** The credential the request presents, read on first use (auth/authentication.ts); null until then. */
    credential: Credential | null
  }
}
