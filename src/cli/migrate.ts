import '../runtime.js'
import { ConfigError, loadConfig } from '../config/config.js'
import { openDatabase } from '../db/database.js'
import { migrateToLatest } from '../db/migrate.js'

// `npm run migrate`: brings the configured database to the latest schema and exits.
try {
  const config = loadConfig()
  const { db, dialect } = openDatabase(config.databaseUrl, { queryLimits: false, preparedStatements: config.pgPreparedStatements })
  try {
    const { results } = await migrateToLatest(db, dialect)
    for (const r of results ?? []) process.stdout.write(`${r.migrationName}: ${r.status}\n`)
    if ((results ?? []).length === 0) process.stdout.write('already up to date\n')
  } finally {
    await db.destroy()
  }
} catch (error) {
  process.stderr.write(error instanceof ConfigError ? `Invalid configuration: ${error.message}\n` : `Migration failed: ${String(error)}\n`)
  process.exit(1)
}
