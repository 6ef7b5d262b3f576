// `npm run openapi [FILE]`: writes the OpenAPI document without a server. The app is built on a
// scratch SQLite database (migrated, then removed) and asked for its document; the output is
// the same document GET /openapi.json serves.
import { writeFileSync } from 'node:fs'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config/config.js'
import { openDatabase } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { scratchDatabase } from '../test/scratch-database.js'

const scratch = await scratchDatabase('openapi')
try {
  const config = loadConfig({ LOG_LEVEL: 'silent', DATABASE_URL: scratch.url })
  const database = openDatabase(config.databaseUrl)
  await migrateToLatest(database.db, database.dialect)
  const app = await buildApp({ config, database, logger: false })
  await app.ready()
  const text = `${JSON.stringify(app.swagger(), null, 2)}\n`
  await app.close()
  const file = process.argv[2]
  if (file === undefined) process.stdout.write(text)
  else writeFileSync(file, text)
} finally {
  await scratch.drop()
}
