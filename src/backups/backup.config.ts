import { mkdirSync, unlinkSync, writeFileSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'

// BACKUP_URL and its companions (README, Configuration): continuous replication of the embedded
// SQLite database by Litestream, to a folder or an S3 bucket. A PostgreSQL database is backed up
// by its own tools (docs/RELIABILITY.md), so BACKUP_URL with DATABASE_URL=postgres://… is refused.

export type BackupTarget =
  | { kind: 'file', /** Absolute path of the replica's folder. */ dir: string }
  | { kind: 's3', bucket: string, /** The key prefix inside the bucket, without leading or trailing slash. */ path: string }

export interface BackupConfig {
  target: BackupTarget
  /** A full copy of the database is uploaded this often; a restore replays the WAL since the newest one before its time. */
  snapshotIntervalSeconds: number
  /** How far back a restore can go: snapshots and WAL older than this are deleted from the replica. */
  retentionSeconds: number
}

export class BackupConfigError extends Error {
  constructor (readonly variable: string, reason: string) {
    super(`${variable}: ${reason}`)
  }
}

/** Reads BACKUP_URL: `file:DIR` (relative to the working folder, or `file:///abs/dir`) or `s3://BUCKET/PATH`. */
export function parseBackupTarget (raw: string): BackupTarget {
  if (raw.startsWith('file:')) {
    let dir = raw.slice('file:'.length)
    if (dir.startsWith('//')) {
      // file:///abs/dir, the URL form (file://host/… names a host: refused).
      if (!dir.startsWith('///')) throw new BackupConfigError('BACKUP_URL', `"${raw}" names a host; use file:DIR or file:///absolute/dir`)
      dir = decodeURIComponent(dir.slice(2))
    }
    if (dir === '') throw new BackupConfigError('BACKUP_URL', 'file: needs a folder, like file:./backups or file:///var/backups/api')
    return { kind: 'file', dir: isAbsolute(dir) ? dir : resolve(dir) }
  }
  if (raw.startsWith('s3://')) {
    const rest = raw.slice('s3://'.length)
    const slash = rest.indexOf('/')
    const bucket = slash === -1 ? rest : rest.slice(0, slash)
    const path = slash === -1 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '')
    // S3's bucket naming rules: 3 to 63 lower-case letters, digits, dots and hyphens.
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new BackupConfigError('BACKUP_URL', `"${bucket}" is not an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens)`)
    if (path === '') throw new BackupConfigError('BACKUP_URL', 's3:// needs a path inside the bucket, like s3://my-bucket/api-db')
    return { kind: 's3', bucket, path }
  }
  throw new BackupConfigError('BACKUP_URL', `must be file:DIR or s3://BUCKET/PATH, got "${raw}"`)
}

type Env = Record<string, string | undefined>

function seconds (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) throw new BackupConfigError(name, `must be a whole number of seconds from ${min} to ${max}, got "${raw}"`)
  return Number(raw)
}

/** The backup settings, or undefined when BACKUP_URL is unset (no backup). */
export function backupConfig (env: Env, databaseUrl: string): BackupConfig | undefined {
  const raw = env.BACKUP_URL
  if (raw === undefined || raw === '') return undefined
  if (!databaseUrl.startsWith('file:')) {
    throw new BackupConfigError('BACKUP_URL', 'replicates the embedded SQLite database; a PostgreSQL database is backed up by its own tools (see docs/RELIABILITY.md)')
  }
  const target = parseBackupTarget(raw)
  const snapshotIntervalSeconds = seconds(env, 'BACKUP_SNAPSHOT_INTERVAL_SECONDS', 3600, 60, 31_536_000)
  const retentionSeconds = seconds(env, 'BACKUP_RETENTION_SECONDS', 86_400, 60, 31_536_000)
  if (retentionSeconds < snapshotIntervalSeconds) {
    throw new BackupConfigError('BACKUP_RETENTION_SECONDS', `must be at least BACKUP_SNAPSHOT_INTERVAL_SECONDS (${snapshotIntervalSeconds}): a restore starts from a snapshot within the retention`)
  }
  return { target, snapshotIntervalSeconds, retentionSeconds }
}

/**
 * Whether the replica's folder can be written (made when missing); the reason when not. An S3
 * target is checked by Litestream itself, whose errors show in the log and the lag.
 */
export function unwritableTarget (target: BackupTarget): string | undefined {
  if (target.kind !== 'file') return undefined
  const probe = join(target.dir, `.write-check-${process.pid}`)
  try {
    mkdirSync(target.dir, { recursive: true })
    writeFileSync(probe, '')
    unlinkSync(probe)
    return undefined
  } catch (error) {
    return `the folder ${target.dir} cannot be written (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`
  }
}
