// Backups of the HA PostgreSQL recipe (scripts/ha-postgres.mjs) in object storage, with Barman's
// cloud commands (Debian's barman-cli-cloud): nothing of the backup is kept on the cluster's
// machines. docs/RELIABILITY.md (Backups and restore) compares it with the streaming recipe.
//
// - WAL: PostgreSQL's archive_command runs barman-cloud-wal-archive for each finished segment, on
//   whichever node is primary (the command is in Patroni's cluster-wide parameters, so a promoted
//   standby archives its timeline from its first segment). archive_timeout closes a segment
//   that long after its first commit at the latest: that, plus one upload, bounds what a loss
//   of every node can take (about HA_ARCHIVE_TIMEOUT_SECONDS + 2 s measured here).
// - Base backups: barman-cloud-backup reads the primary's data folder while PostgreSQL runs
//   (so it runs on the primary's host; here every node is on this machine) and uploads it.
// - The store: BACKUP_URL-style s3://BUCKET/PATH; the credentials from AWS_ACCESS_KEY_ID and
//   AWS_SECRET_ACCESS_KEY in the environment PostgreSQL and these commands run in (never in a
//   configuration file); an S3-compatible endpoint from AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL,
//   passed as --endpoint-url (Debian's boto3 does not read those variables).
// - restoreFromCloud() brings up a NEW PostgreSQL from the store: the newest base backup that
//   ended before the target (or the newest), barman-cloud-restore, then recovery that fetches
//   every segment with barman-cloud-wal-restore, following timeline switches (failovers).
import { execFileSync, spawnSync } from 'node:child_process'
import { chownSync, existsSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { asPostgres, owned, RecoveryEndedEarly, startRestoredCopy } from './barman.mjs'

const SERVER = 'pg'

/** What is missing for object-storage backups here; undefined when nothing is. */
export function cloudMissing () {
  return spawnSync('barman-cloud-wal-archive', ['--version'], { stdio: 'ignore' }).error !== undefined
    ? 'barman-cloud-wal-archive is not on the PATH (apt-get install barman-cli-cloud)'
    : undefined
}

/** Reads an s3://BUCKET/PATH URL; throws one line for anything else. */
export function parseCloudUrl (url) {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\/([^?#@]*[^/?#@])\/?$/.exec(url ?? '')
  if (match === null) throw new Error(`HA_BACKUP_URL must be s3://BUCKET/PATH (no credentials, query or fragment), got "${String(url).replace(/^(s3:\/\/)?[^/]*@/, '$1***@')}"`)
  return url.replace(/\/+$/, '')
}

/** The options every barman-cloud command takes for the store in `env`. */
function storeOptions (env = process.env) {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL
  return ['--cloud-provider', 'aws-s3', ...(endpoint ? ['--endpoint-url', endpoint] : [])]
}

/**
 * Patroni's cluster-wide PostgreSQL parameters that archive every WAL segment to `url` within
 * `timeoutSeconds` of its first commit. A failing upload is retried by PostgreSQL, which keeps
 * the segment until it succeeds (pg_stat_archiver counts the failures).
 */
export function archiveParameters ({ url, timeoutSeconds = 60, env = process.env }) {
  const command = ['barman-cloud-wal-archive', ...storeOptions(env), '--gzip', url, SERVER, '%p'].join(' ')
  // UTC: the backups' end times are listed without a zone (see endTime).
  return { archive_mode: 'on', archive_command: command, archive_timeout: `${timeoutSeconds}s`, timezone: 'UTC' }
}

function cloud (tool, args, home, env = process.env) {
  const result = spawnSync(tool, [...storeOptions(env), ...args], { encoding: 'utf8', ...asPostgres(home), timeout: 30 * 60 * 1000 })
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim()
  if (result.status !== 0) {
    // Its last line, without the logger's time and pid (`2026-… [123] ERROR: `).
    const reason = (output.split('\n').filter((line) => line.trim() !== '').at(-1) ?? `exit ${result.status}`).replace(/^\d{4}-\d\d-\d\d [\d:,]+ \[\d+\] [A-Z]+: /, '')
    throw new Error(`${tool} failed: ${reason}`)
  }
  return result.stdout
}

/**
 * A base backup of the primary behind `port` (the recipe's HAProxy) into `url`, as the postgres
 * user with `password`. Returns its id and how long it took.
 */
export function cloudBackup ({ url, port, password, home }) {
  const started = Date.now()
  const pass = join(home, 'cloud-pgpass')
  writeFileSync(pass, `127.0.0.1:${port}:*:postgres:${password}\n`, { mode: 0o600 })
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))
    chownSync(pass, uid, gid)
  }
  try {
    const result = spawnSync('barman-cloud-backup', [...storeOptions(), '--gzip', '--immediate-checkpoint', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', url, SERVER],
      { encoding: 'utf8', ...asPostgres(home), env: { ...asPostgres(home).env, PGPASSFILE: pass }, timeout: 30 * 60 * 1000 })
    if (result.status !== 0) throw new Error(`barman-cloud-backup failed: ${`${result.stdout}${result.stderr}`.trim().split('\n').at(-1)?.replace(/^\d{4}-\d\d-\d\d [\d:,]+ \[\d+\] [A-Z]+: /, '')}`)
  } finally {
    rmSync(pass, { force: true })
  }
  const newest = cloudBackups(url, home)[0]
  return { id: newest?.id, seconds: (Date.now() - started) / 1000 }
}

/**
 * A backup's end time as barman-cloud-backup-list prints it: Python's ctime() of PostgreSQL's
 * time, which names no zone; the cluster runs in UTC (archiveParameters), so it is UTC.
 */
function endTime (text) {
  const match = /^\w{3} (\w{3}) +(\d{1,2}) (\d\d:\d\d:\d\d) (\d{4})$/.exec(String(text))
  const time = match === null ? NaN : Date.parse(`${match[2]} ${match[1]} ${match[4]} ${match[3]} UTC`)
  if (Number.isNaN(time)) throw new Error(`barman-cloud-backup-list gave an end time this script cannot read: "${text}"`)
  return time
}

/** The finished base backups in `url`, newest first: id and end time. */
export function cloudBackups (url, home) {
  const listed = JSON.parse(cloud('barman-cloud-backup-list', ['--format', 'json', url, SERVER], home))
  return (listed.backups_list ?? []).filter((b) => b.status === 'DONE')
    .map((b) => ({ id: b.backup_id, end: endTime(b.end_time) }))
    .sort((a, b) => b.end - a.end)
}

/**
 * A new PostgreSQL from the backups in `url`: data in `output` (a new folder), listening on
 * 127.0.0.1:`port`, at `at` (a Date; undefined: the latest point the archive holds), promoted.
 */
export async function restoreFromCloud ({ url, output, port, at, bin }) {
  const startedAt = Date.now()
  url = parseCloudUrl(url)
  output = resolve(output)
  if (existsSync(output)) throw new Error(`${output} exists; a restore writes a new folder and never overwrites one`)
  const parent = owned(dirname(output))
  const found = cloudBackups(url, parent)
  if (found.length === 0) throw new Error(`${url} holds no finished base backup (is it the HA_BACKUP_URL the cluster archives to?)`)
  const backup = at === undefined ? found[0] : found.find((b) => b.end + 1000 <= at.getTime())
  if (backup === undefined) throw new Error(`${at.toISOString()} is before the end of the oldest backup (${new Date(found.at(-1).end).toISOString()})`)
  cloud('barman-cloud-restore', [url, SERVER, backup.id, output], parent)
  writeFileSync(join(output, 'recovery.signal'), '')
  const restoreCommand = ['barman-cloud-wal-restore', ...storeOptions(), url, SERVER, '%f', '%p'].join(' ')
  const recovery = ["recovery_target_timeline = 'latest'",
    ...(at === undefined ? [] : [`recovery_target_time = '${at.toISOString().replace('T', ' ').replace('Z', '+00:00')}'`, "recovery_target_action = 'promote'"])]
  let copy
  try {
    copy = await startRestoredCopy({ output, parent, port, bin, restoreCommand, recovery })
  } catch (error) {
    // A time after the archive's last commit: the state at that time is the latest one.
    if (at !== undefined && error instanceof RecoveryEndedEarly) {
      rmSync(output, { recursive: true, force: true })
      rmSync(error.log, { force: true })
      const latest = await restoreFromCloud({ url, output, port, at: undefined, bin })
      return { ...latest, asOf: `the latest point (the archive ends before ${at.toISOString()})`, seconds: (Date.now() - startedAt) / 1000 }
    }
    throw error
  }
  return { output, port, backup: backup.id, asOf: at === undefined ? 'the latest point' : at.toISOString(), seconds: (Date.now() - startedAt) / 1000, ...copy }
}
