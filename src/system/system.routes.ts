import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import fp from 'fastify-plugin'
import { authenticate, requireAdmin } from '../auth/authentication.js'
import { requires } from '../auth/scopes.js'
import { describeTarget } from '../backups/backup.config.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { AUTH_ERRORS, errorResponses, success } from '../http/schemas.js'
import { VERSION } from '../version.js'
import { failingEndpoints, mailCounts, postgresArchiving } from './system.repository.js'
import { SystemStatus } from './system.schemas.js'

// The service's state as an operator checks it each morning (the console's System screen): the
// version, the database, the backup's health, mail waiting or given up on, failing webhooks.
// Read when asked, from the database and this instance's replication (server.ts reports it):
// counts over indexed columns, nothing kept in memory to drift.

/** The replication's state, as server.ts reports it once Litestream runs (SQLite under BACKUP_URL). */
export interface ReplicationReport { state?: () => { lagSeconds: number, lastError: string | null } }

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect, config } = app

  app.get('/system', {
    onRequest: authenticate,
    schema: {
      tags: ['system'],
      operationId: 'getSystem',
      summary: 'The service\'s state (administrators)',
      description: 'The version, the database, the backup (SQLite: Litestream\'s replica and its lag; PostgreSQL: the server\'s WAL archiving), mail waiting and failed, failing webhook endpoints. Administrators only (anyone else 403 ACCESS_DENIED; an API key 403 INSUFFICIENT_SCOPE).',
      security: requires('session'),
      response: { 200: success(SystemStatus, { description: 'The state now.' }), ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'ACCESS_DENIED') }
    }
  }, async (request) => {
    requireAdmin(request)
    const [mail, failing, archiving] = await Promise.all([mailCounts(db), failingEndpoints(db), postgresArchiving(db, dialect)])
    const replication = app.replicationReport.state?.()
    const backup = archiving !== undefined
      ? { enabled: archiving.enabled, target: null, lagSeconds: null, lastError: archiving.lastError }
      : { enabled: config.backup !== undefined, target: config.backup === undefined ? null : describeTarget(config.backup.target), lagSeconds: replication?.lagSeconds ?? null, lastError: replication?.lastError ?? null }
    return { version: VERSION, database: dialect, backup, mail, webhooks: { failingEndpoints: failing } }
  })
}

export const systemRoutes = fp(routes, { name: 'system', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
