import { mkdirSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileUrlFolder } from '../config/file-url.js'

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
  readonly variable: string

  constructor (variable: string, reason: string) {
    super(`${variable}: ${reason}`)
    this.variable = variable
  }
}

// Secrets never reach a message or a log line: BACKUP_URL is quoted only as
// redactedBackupUrl() gives it, and a target only as describeTarget() does. S3 credentials come
// from the AWS variables Litestream reads itself (litestream.ts), so an s3:// URL that holds
// any (before an `@`), or a query or fragment where one could be pasted, is refused rather than
// half used (a query would otherwise end up in the key prefix of every object uploaded).

/**
 * Query options an s3:// BACKUP_URL may carry: none yet. Any other is refused, since a query is
 * where a secret gets pasted, and its value is never quoted.
 */
const S3_QUERY_OPTIONS: ReadonlySet<string> = new Set<string>()

/** A query option's name, shown in a redacted URL; anything else there is masked like a value. */
const OPTION_NAME = /^[a-z][a-z0-9_-]{0,31}$/

/** The scheme kept in front of masked credentials; anything before an `@` after it is masked. */
const SCHEME = /^(?:[a-z][a-z0-9+.-]*:\/\/|file:|s3:)/i

/**
 * BACKUP_URL as messages and logs may show it: whatever is before the last `@` of the part that
 * names the place is `***` (that whole part, not only up to the first `/`: an AWS secret key may
 * hold a `/`), and so are the values of a query and a whole fragment. Works on any text,
 * well-formed or not.
 */
export function redactedBackupUrl (raw: string): string {
  const { place, query, fragment } = splitUrl(raw)
  const at = place.lastIndexOf('@')
  const shownPlace = at === -1 ? place : `${SCHEME.exec(place)?.[0] ?? ''}***${place.slice(at)}`
  const shownQuery = query === undefined
    ? ''
    : `?${query.split('&').map((part) => {
      const name = part.split('=', 1)[0]!
      return part.includes('=') && OPTION_NAME.test(name) ? `${name}=***` : '***'
    }).join('&')}`
  return `${shownPlace}${shownQuery}${fragment === undefined ? '' : '#***'}`
}

/** The place (up to the first `?` or `#`), the query (after `?`) and the fragment (after `#`). */
function splitUrl (raw: string): { place: string, query: string | undefined, fragment: string | undefined } {
  const hash = raw.indexOf('#')
  const beforeHash = hash === -1 ? raw : raw.slice(0, hash)
  const question = beforeHash.indexOf('?')
  return {
    place: question === -1 ? beforeHash : beforeHash.slice(0, question),
    query: question === -1 ? undefined : beforeHash.slice(question + 1),
    fragment: hash === -1 ? undefined : raw.slice(hash + 1)
  }
}

/** A target as logs and messages show it: the folder, or the s3:// URL (redacted all the same). */
export function describeTarget (target: BackupTarget): string {
  return target.kind === 'file' ? target.dir : redactedBackupUrl(`s3://${target.bucket}/${target.path}`)
}

/**
 * Reads BACKUP_URL: `file:DIR` (relative to the working folder, or `file:///abs/dir`) or
 * `s3://BUCKET/PATH` (no credentials, query or fragment in it).
 */
export function parseBackupTarget (raw: string): BackupTarget {
  if (raw.startsWith('file:')) {
    const folder = fileUrlFolder(raw)
    if ('dir' in folder) return { kind: 'file', dir: folder.dir }
    throw new BackupConfigError('BACKUP_URL', {
      host: `"${redactedBackupUrl(raw)}" names a host; use file:DIR or file:///absolute/dir`,
      encoding: `"${redactedBackupUrl(raw)}" is not valid percent-encoding`,
      empty: 'file: needs a folder, like file:./backups or file:///var/backups/api'
    }[folder.refused])
  }
  if (raw.startsWith('s3://')) {
    const { place, query, fragment } = splitUrl(raw)
    if (place.includes('@')) {
      throw new BackupConfigError('BACKUP_URL', `"${redactedBackupUrl(raw)}" holds credentials (before "@"), which BACKUP_URL never carries: give them in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN)`)
    }
    if (fragment !== undefined) throw new BackupConfigError('BACKUP_URL', `"${redactedBackupUrl(raw)}": an s3:// URL takes no fragment (#…)`)
    if (query !== undefined && query.split('&').some((part) => !S3_QUERY_OPTIONS.has(part.split('=', 1)[0]!))) {
      const taken = S3_QUERY_OPTIONS.size === 0 ? 'no query options' : `only the query options ${[...S3_QUERY_OPTIONS].join(', ')}`
      throw new BackupConfigError('BACKUP_URL', `"${redactedBackupUrl(raw)}": an s3:// URL takes ${taken} (values not shown); credentials go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, the region in AWS_REGION, an S3-compatible endpoint in AWS_ENDPOINT_URL_S3`)
    }
    const rest = place.slice('s3://'.length)
    const slash = rest.indexOf('/')
    const bucket = slash === -1 ? rest : rest.slice(0, slash)
    const path = slash === -1 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '')
    // S3's bucket naming rules: 3 to 63 lower-case letters, digits, dots and hyphens.
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new BackupConfigError('BACKUP_URL', `"${bucket}" is not an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens)`)
    if (path === '') throw new BackupConfigError('BACKUP_URL', 's3:// needs a path inside the bucket, like s3://my-bucket/api-db')
    return { kind: 's3', bucket, path }
  }
  throw new BackupConfigError('BACKUP_URL', `must be file:DIR or s3://BUCKET/PATH, got "${redactedBackupUrl(raw)}"`)
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
  if (target.kind === 's3') checkEndpoint(env)
  const snapshotIntervalSeconds = seconds(env, 'BACKUP_SNAPSHOT_INTERVAL_SECONDS', 3600, 60, 31_536_000)
  const retentionSeconds = seconds(env, 'BACKUP_RETENTION_SECONDS', 86_400, 60, 31_536_000)
  if (retentionSeconds < snapshotIntervalSeconds) {
    throw new BackupConfigError('BACKUP_RETENTION_SECONDS', `must be at least BACKUP_SNAPSHOT_INTERVAL_SECONDS (${snapshotIntervalSeconds}): a restore starts from a snapshot within the retention`)
  }
  return { target, snapshotIntervalSeconds, retentionSeconds }
}

/**
 * An S3-compatible store's endpoint (MinIO, R2, a test server), as the AWS SDKs read it:
 * AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL. Litestream addresses such a store path-style
 * (`ENDPOINT/BUCKET/KEY`). Unset: AWS S3 itself, in AWS_REGION.
 */
function checkEndpoint (env: Env): void {
  const name = env.AWS_ENDPOINT_URL_S3 !== undefined && env.AWS_ENDPOINT_URL_S3 !== '' ? 'AWS_ENDPOINT_URL_S3' : 'AWS_ENDPOINT_URL'
  const raw = env[name]
  if (raw === undefined || raw === '') return
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new BackupConfigError(name, `must be the store's http(s) URL, like https://s3.example.com or http://127.0.0.1:9000, got "${redactedBackupUrl(raw)}"`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new BackupConfigError(name, `must be an http(s) URL, got "${redactedBackupUrl(raw)}"`)
  if (url.username !== '' || url.password !== '') throw new BackupConfigError(name, `"${redactedBackupUrl(raw)}" holds credentials (before "@"): give them in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY`)
  if (url.search !== '' || url.hash !== '') throw new BackupConfigError(name, `"${redactedBackupUrl(raw)}": the endpoint takes no query or fragment`)
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
