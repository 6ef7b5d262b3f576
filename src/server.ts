import './runtime.js'
import { setTimeout as sleep } from 'node:timers/promises'
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type Config } from './config/config.js'
import { openDatabase } from './db/database.js'
import { migrateToLatest } from './db/migrate.js'
import { logWhenWritten } from './service/log-written.js'
import { ensureAdmin } from './users/admin-bootstrap.js'

function readConfig (): Config {
  try {
    return loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`Invalid configuration: ${error.message}\n`)
      process.exit(1)
    }
    throw error
  }
}

const config = readConfig()
const database = openDatabase(config.databaseUrl, { preparedStatements: config.pgPreparedStatements })
const app = await buildApp({ config, database })

try {
  // Migrations on a connection of their own, without the per-query time limits (see openDatabase).
  const migrations = openDatabase(config.databaseUrl, { queryLimits: false, preparedStatements: config.pgPreparedStatements })
  try {
    await migrateToLatest(migrations.db, migrations.dialect)
  } finally {
    await migrations.db.destroy()
  }
  if (config.adminEmail !== undefined && config.adminPassword !== undefined) {
    const outcome = await ensureAdmin(database.db, config.adminEmail, config.adminPassword)
    app.log.info({ outcome }, 'admin account ready')
  }
} catch (error) {
  await logWhenWritten(app.log, () => { app.log.fatal({ err: error }, 'start-up failed: the database could not be prepared') })
  await app.close()
  process.exit(1)
}

// The process stops on SIGTERM or SIGINT only. Database failures are answered per request
// (503); a stray promise rejection is logged and the server keeps serving. An uncaught
// exception leaves the process in an unknown state: it is logged, as soon as no log write is in
// flight so that the line lands after every earlier one (a second at most: service/log-written.ts),
// and the process exits 1.
process.on('unhandledRejection', (reason) => { app.log.error({ err: reason }, 'unhandled promise rejection') })
process.on('uncaughtException', (error) => {
  void logWhenWritten(app.log, () => { app.log.fatal({ err: error }, 'uncaught exception, exiting') }).then(() => process.exit(1))
})

// SIGTERM/SIGINT: drain, hold, then close (see http/drain.ts). For SHUTDOWN_GRACE_MS the
// instance answers 503 on readiness and serves every request with `Connection: close`; then new
// requests wait until connections stop arriving (a second at most); then the listener closes,
// the waiting requests are served, requests in flight finish (bounded by the 30 s request and
// 5 s query limits), the database closes and the process exits 0. A second signal exits 1 at once.
closeWithGrace({
  delay: config.shutdownGraceMs + 60_000,
  logger: app.log,
  skip: ['uncaughtException', 'unhandledRejection']
}, async ({ signal }) => {
  app.log.info({ signal, graceMs: config.shutdownGraceMs }, 'draining: not ready, still serving')
  app.drain.begin()
  await sleep(config.shutdownGraceMs)
  await app.drain.hold()
  app.log.info('closing: no new connections, finishing requests in flight')
  await app.close()
})

try {
  await app.listen({ port: config.port, host: config.host })
  if (config.metricsPort !== 0) app.log.info(`metrics listening at http://${await app.metricsListener.listen(config.metricsHost, config.metricsPort)}/metrics`)
} catch (error) {
  await logWhenWritten(app.log, () => { app.log.fatal({ err: error }, 'could not listen') })
  await app.close()
  process.exit(1)
}
