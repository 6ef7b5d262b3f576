import type { Config } from './config/config.js'
import type { Db } from './db/schema.js'
import type { DialectName } from './db/database.js'
import type { CurrentUser } from './sessions/authentication.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
    db: Db
    dialect: DialectName
  }
  interface FastifyRequest {
    /** The logged-in caller, set by the `authenticate` hook on routes that need one. */
    user: CurrentUser | null
    /** The hash of the caller's bearer token (its session), set with `user`. */
    sessionTokenHash: string | null
  }
}
