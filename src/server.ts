import { enableCompileCache } from 'node:module'
import type { Config } from './config/config.js'

// V8's compile cache (in the system's temporary folder; NODE_COMPILE_CACHE names another,
// NODE_DISABLE_COMPILE_CACHE=1 turns it off), before anything else is loaded: a start after the
// first reads the compiled code of the service's modules and of its dependencies instead of
// compiling them again: about an eighth less CPU by ready (docs/PERFORMANCE.md, Start-up).
// Hence the imports below are dynamic: static ones are compiled before any code of this module runs.
// (Node.js before 22.1 has no cache; runtime.js then says the version is too old.)
enableCompileCache?.()
await import('./runtime.js')
// Before the modules load (their loading runs full garbage collections): src/next-tick-shape.ts.
const { keepNextTickShape } = await import('./next-tick-shape.js')
keepNextTickShape()
const [
  { setTimeout: sleep }, { default: closeWithGrace }, { buildApp }, { unwritableTarget }, { litestreamBinary }, { Replication },
  { ConfigError, loadConfig }, { openDatabase, sqliteFile }, { migrateToLatest }, { logWhenWritten }, { ensureAdmin }
] = await Promise.all([
  import('node:timers/promises'), import('close-with-grace'), import('./app.js'), import('./backups/backup.config.js'),
  import('./backups/litestream.js'), import('./backups/replication.js'), import('./config/config.js'), import('./db/database.js'),
  import('./db/migrate.js'), import('./service/log-written.js'), import('./users/admin-bootstrap.js')
])

function invalid (message: string): never {
  process.stderr.write(`Invalid configuration: ${message}\n`)
  process.exit(1)
}

function readConfig (): Config {
  try {
    return loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) invalid(error.message)
    throw error
  }
}

const config = readConfig()
// BACKUP_URL: Litestream must be installed for this platform and the replica's folder writable.
const litestream = config.backup === undefined ? undefined : litestreamBinary()
if (config.backup !== undefined) {
  if (litestream === undefined) invalid(`BACKUP_URL: Litestream is not installed for ${process.platform}-${process.arch} (npm package @flydotio/litestream)`)
  const unwritable = unwritableTarget(config.backup.target)
  if (unwritable !== undefined) invalid(`BACKUP_URL: ${unwritable}`)
}
// Under replication Litestream makes the checkpoints (db/database.ts).
const database = openDatabase(config.databaseUrl, { preparedStatements: config.pgPreparedStatements, replicated: config.backup !== undefined })
const app = await buildApp({ config, database })
let replication: InstanceType<typeof Replication> | undefined

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
  // Replication starts once the database file exists (Litestream waits silently for a missing one).
  if (config.backup !== undefined) {
    const started = new Replication({ databaseFile: sqliteFile(config.databaseUrl), backup: config.backup, binary: litestream!, log: app.log, registry: app.metricsRegistry })
    started.start()
    replication = started
    app.replicationReport.state = () => started.state()
  } else if (database.dialect === 'sqlite') {
    app.log.warn('no backup: BACKUP_URL is unset, so the database is copied nowhere; a lost disk or a mistaken delete loses it (docs/RELIABILITY.md, Backups and restore)')
  }
} catch (error) {
  await logWhenWritten(app.log, () => { app.log.fatal({ err: error }, 'start-up failed: the database could not be prepared') })
  await app.close()
  await replication?.stop()
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

// SIGTERM/SIGINT: drain, hold, then close (see pipeline/drain.ts). For SHUTDOWN_GRACE_MS the
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
  // After the database closed: Litestream's final sync uploads the last commits.
  await replication?.stop()
})

try {
  await app.listen({ port: config.port, host: config.host })
  if (config.metricsPort !== 0) app.log.info(`metrics listening at http://${await app.metricsListener.listen(config.metricsHost, config.metricsPort)}/metrics`)
} catch (error) {
  await logWhenWritten(app.log, () => { app.log.fatal({ err: error }, 'could not listen') })
  await app.close()
  await replication?.stop()
  process.exit(1)
}
