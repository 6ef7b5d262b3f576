import '../runtime.js'
import { parseArgs } from 'node:util'
import { backupConfig, BackupConfigError } from '../backups/backup.config.js'
import { litestreamBinary } from '../backups/litestream.js'
import { parseRestoreTime, restore, RestoreError } from '../backups/restore.js'
import { migrationNames } from '../db/migrate.js'
import { awsVariables, ConfigError, storageTarget, storeTimeout } from '../config/config.js'
import { openBackupCopy, restoreFiles } from '../files/backup-copy.js'
import { FolderStore } from '../files/folder-store.js'
import { restorePostgres } from '../../scripts/barman.mjs'
import { restoreFromCloud } from '../../scripts/barman-cloud.mjs'
import { postgresBin } from '../../scripts/ha-postgres.mjs'

// `npm run restore -- --output PATH [--at RFC3339-TIME]`, with the BACKUP_URL the service
// replicates to: writes the database as of that time (default: the newest state) to PATH, a
// new file, and checks it, and copies the files' backup into the STORAGE_URL folder. Then
// `DATABASE_URL=file:PATH npm start` serves it.
//
// `npm run restore -- --postgres BACKUP_DIR --output DATA_DIR --port PORT [--at TIME]`: from the
// Barman folder of `npm run cluster -- --ha` (HA_BACKUP_DIR), a new PostgreSQL in DATA_DIR, at
// that time (default: the latest point), listening on 127.0.0.1:PORT (scripts/barman.mjs). With
// `--postgres s3://BUCKET/PATH`, from the object storage of HA_BACKUP_URL (scripts/barman-cloud.mjs;
// the AWS_* variables give the credentials and endpoint).

const USAGE = 'usage: npm run restore -- --output PATH [--at 2026-11-26T14:05:00Z]   (with BACKUP_URL set)\n' +
  '       npm run restore -- --postgres BACKUP_DIR|s3://BUCKET/PATH --output DATA_DIR --port PORT [--at 2026-11-26T14:05:00Z]'

function fail (message: string): never {
  process.stderr.write(`restore: ${message}\n`)
  process.exit(1)
}

let values: { output?: string, at?: string, postgres?: string, port?: string, help?: boolean }
try {
  values = parseArgs({ options: { output: { type: 'string' }, at: { type: 'string' }, postgres: { type: 'string' }, port: { type: 'string' }, help: { type: 'boolean' } }, strict: true }).values
} catch (error) {
  fail(`${(error as Error).message}\n${USAGE}`)
}
if (values.help === true) {
  process.stdout.write(`${USAGE}\n`)
  process.exit(0)
}
if (values.output === undefined || values.output === '') fail(`--output is required\n${USAGE}`)

if (values.postgres !== undefined) {
  const port = Number(values.port)
  if (values.port === undefined || !/^\d+$/.test(values.port) || port < 1 || port > 65535) fail(`--port: a free port for the restored PostgreSQL is required (1 to 65535)\n${USAGE}`)
  const bin = postgresBin()
  if (bin === undefined) fail('no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin; set PG_BIN or install Debian\'s postgresql')
  try {
    const at = values.at === undefined ? undefined : parseRestoreTime(values.at)
    const restored = values.postgres.startsWith('s3://')
      ? await restoreFromCloud({ url: values.postgres, output: values.output, port, at, bin })
      : await restorePostgres({ dir: values.postgres, output: values.output, port, at, bin })
    process.stdout.write(`restored PostgreSQL as of ${restored.asOf} from backup ${restored.backup} in ${restored.seconds.toFixed(1)} s\n` +
      `listening on 127.0.0.1:${port} (the cluster's roles and passwords), data in ${restored.output}, log ${restored.log}\n` +
      `stop it: pg_ctl -D ${restored.output} stop (as the postgres user)\n`)
    process.exit(0)
  } catch (error) {
    fail((error as Error).message)
  }
}

try {
  // The replica's settings are the service's own; the database it names is the file restored to.
  const backup = backupConfig(process.env, `file:${values.output}`)
  if (backup === undefined) fail('BACKUP_URL is not set: give the file:DIR or s3://BUCKET/PATH the service replicates to')
  const binary = litestreamBinary()
  if (binary === undefined) fail(`Litestream is not installed for ${process.platform}-${process.arch} (npm package @flydotio/litestream)`)
  const at = values.at === undefined ? undefined : parseRestoreTime(values.at)
  const result = restore({ output: values.output, at, backup, binary, knownMigrations: migrationNames() })
  const counts = Object.entries(result.tables).map(([table, n]) => `${table} ${n}`).join(', ')
  // The files' copy, back into the folder the service stores files in (STORAGE_URL). In S3, the
  // bucket is the files' copy: nothing to bring back.
  const storage = storageTarget(process.env)
  let files = ''
  if (storage.kind === 'folder') {
    const copy = await openBackupCopy(backup.target, awsVariables(process.env), storeTimeout(process.env))
    const { copied, present } = await restoreFiles(copy, new FolderStore(storage.dir))
    await copy.close()
    files = `files: ${copied} copied into ${storage.url}, ${present} there already\n`
  }
  process.stdout.write(`restored ${result.output} as of ${result.asOf} (generation ${result.generation}) in ${result.seconds.toFixed(1)} s\n` +
    `integrity ok; rows: ${counts}\n` + files +
    `serve it: DATABASE_URL=file:${result.output} npm start\n`)
} catch (error) {
  if (error instanceof RestoreError || error instanceof BackupConfigError || error instanceof ConfigError) fail(error.message)
  throw error
}
