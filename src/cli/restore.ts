import '../runtime.js'
import { parseArgs } from 'node:util'
import { backupConfig, BackupConfigError } from '../backups/backup.config.js'
import { litestreamBinary } from '../backups/litestream.js'
import { parseRestoreTime, restore, RestoreError } from '../backups/restore.js'
import { migrationNames } from '../db/migrate.js'

// `npm run restore -- --output PATH [--at RFC3339-TIME]`, with the BACKUP_URL the service
// replicates to: writes the database as of that time (default: the newest state) to PATH, a
// new file, and checks it. Then `DATABASE_URL=file:PATH npm start` serves it.

const USAGE = 'usage: npm run restore -- --output PATH [--at 2026-11-26T14:05:00Z]   (with BACKUP_URL set)'

function fail (message: string): never {
  process.stderr.write(`restore: ${message}\n`)
  process.exit(1)
}

let values: { output?: string, at?: string, help?: boolean }
try {
  values = parseArgs({ options: { output: { type: 'string' }, at: { type: 'string' }, help: { type: 'boolean' } }, strict: true }).values
} catch (error) {
  fail(`${(error as Error).message}\n${USAGE}`)
}
if (values.help === true) {
  process.stdout.write(`${USAGE}\n`)
  process.exit(0)
}
if (values.output === undefined || values.output === '') fail(`--output is required\n${USAGE}`)

try {
  // The replica's settings are the service's own; the database it names is the file restored to.
  const backup = backupConfig(process.env, `file:${values.output}`)
  if (backup === undefined) fail('BACKUP_URL is not set: give the file:DIR or s3://BUCKET/PATH the service replicates to')
  const binary = litestreamBinary()
  if (binary === undefined) fail(`Litestream is not installed for ${process.platform}-${process.arch} (npm package @flydotio/litestream)`)
  const at = values.at === undefined ? undefined : parseRestoreTime(values.at)
  const result = restore({ output: values.output, at, backup, binary, knownMigrations: migrationNames() })
  const counts = Object.entries(result.tables).map(([table, n]) => `${table} ${n}`).join(', ')
  process.stdout.write(`restored ${result.output} as of ${result.asOf} (generation ${result.generation}) in ${result.seconds.toFixed(1)} s\n` +
    `integrity ok; rows: ${counts}\n` +
    `serve it: DATABASE_URL=file:${result.output} npm start\n`)
} catch (error) {
  if (error instanceof RestoreError || error instanceof BackupConfigError) fail(error.message)
  throw error
}
