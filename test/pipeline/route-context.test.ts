import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config/config.js'
import { openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { routeOf } from '../../src/pipeline/route-context.js'
import { freshDatabaseUrl, QUIET_LIMITS } from '../helper.js'

// routeOf reads a request's route from Fastify's route context instead of building
// `request.routeOptions` (src/pipeline/route-context.ts). It must say what routeOptions says, for every
// kind of request: a route with a schema, one with query rules, an unknown path, a 405.

test('routeOf says what request.routeOptions says: pattern, schema and config', async (t) => {
  const { url, drop } = await freshDatabaseUrl()
  const config = loadConfig({ ...QUIET_LIMITS, DATABASE_URL: url })
  const database = openDatabase(config.databaseUrl)
  await migrateToLatest(database.db, database.dialect)
  const app = await buildApp({ config, database, logger: false })
  const seen: Array<{ url: string, same: boolean, pattern: string | undefined }> = []
  app.addHook('onResponse', (request, _reply, done) => {
    const options = request.routeOptions
    const route = routeOf(request)
    seen.push({ url: request.url, pattern: route.config.url, same: route.config.url === options.url && route.schema === options.schema && route.config === options.config })
    done()
  })
  await app.ready()
  t.after(async () => { await app.close(); await drop() })
  for (const [method, path] of [['GET', '/v1/posts/1'], ['GET', '/v1/posts?limit=2'], ['POST', '/v1/users'], ['GET', '/nowhere'], ['DELETE', '/v1/products/1'], ['GET', '/health/live']] as const) {
    await app.inject({ method, url: path })
  }
  assert.deepEqual(seen.map((s) => s.pattern), ['/v1/posts/:id', '/v1/posts', '/v1/users', undefined, undefined, '/health/live'])
  for (const s of seen) assert.ok(s.same, `${s.url}: routeOf differs from routeOptions`)
})
