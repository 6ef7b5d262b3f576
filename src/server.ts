import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type Config } from './config/config.js'
import { openDatabase } from './db/database.js'
import { migrateToLatest } from './db/migrate.js'
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
const database = openDatabase(config.databaseUrl)
const app = await buildApp({ config, database })

try {
  await migrateToLatest(database.db, database.dialect)
  if (config.adminEmail !== undefined && config.adminPassword !== undefined) {
    const outcome = await ensureAdmin(database.db, config.adminEmail, config.adminPassword)
    app.log.info({ outcome }, 'admin account ready')
  }
} catch (error) {
  app.log.fatal({ err: error }, 'start-up failed: the database could not be prepared')
  await app.close()
  process.exit(1)
}

// SIGTERM/SIGINT: stop accepting, let in-flight requests finish, close the database, exit 0.
closeWithGrace({ delay: 10_000, logger: app.log }, async ({ err }) => {
  if (err !== undefined) app.log.error({ err }, 'closing after an error')
  await app.close()
})

try {
  await app.listen({ port: config.port, host: config.host })
} catch (error) {
  app.log.fatal({ err: error }, 'could not listen')
  await app.close()
  process.exit(1)
}
