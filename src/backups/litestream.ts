import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { BackupConfig } from './backup.config.js'

// Litestream (0.3.13), from the npm package @flydotio/litestream: its platform package holds the
// binary, which is run directly (the package's own `litestream` command runs it with spawnSync,
// always exits 0 and leaves it running on SIGTERM).

/** The Litestream binary of this platform; undefined when the platform has none installed. */
export function litestreamBinary (): string | undefined {
  const require = createRequire(import.meta.url)
  try {
    const manifest = require.resolve(`@flydotio/litestream-${process.platform}-${process.arch}/package.json`)
    const binary = join(dirname(manifest), 'litestream')
    return existsSync(binary) ? binary : undefined
  } catch {
    return undefined
  }
}

/**
 * Litestream's checks of the database: every 250 ms it copies new WAL frames aside (its default
 * is 1 s); every second (sync-interval) it uploads what it copied. A commit is therefore in the
 * replica about 1 to 1.3 s after it was made, within the 2 s promised.
 */
const MONITOR_INTERVAL = '250ms'
const SYNC_INTERVAL = '1s'

function duration (seconds: number): string {
  return `${seconds}s`
}

/** The replica's part of Litestream's configuration. */
function replica (config: BackupConfig, env: Record<string, string | undefined>): Record<string, unknown> {
  const common = {
    'sync-interval': SYNC_INTERVAL,
    'snapshot-interval': duration(config.snapshotIntervalSeconds),
    retention: duration(config.retentionSeconds),
    'retention-check-interval': duration(Math.min(3600, config.retentionSeconds))
  }
  const { target } = config
  if (target.kind === 'file') return { type: 'file', path: target.dir, ...common }
  // Credentials come from the usual AWS variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
  // AWS_SESSION_TOKEN), which Litestream reads itself; the region and an S3-compatible
  // endpoint from AWS_REGION and AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, which it does not.
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL
  return {
    type: 's3',
    bucket: target.bucket,
    path: target.path,
    ...(region !== undefined && region !== '' ? { region } : {}),
    ...(endpoint !== undefined && endpoint !== '' ? { endpoint } : {}),
    ...common
  }
}

/**
 * Litestream's configuration file for one database (JSON is YAML). Its log goes to stderr as
 * JSON lines, read by the service (backups/replication.ts). No metrics listener: the service
 * reports the replication's state itself.
 */
export function litestreamConfig (databaseFile: string, config: BackupConfig, env: Record<string, string | undefined> = process.env): string {
  return JSON.stringify({
    logging: { level: 'info', type: 'json', stderr: true },
    dbs: [{ path: databaseFile, 'monitor-interval': MONITOR_INTERVAL, replicas: [replica(config, env)] }]
  }, null, 2) + '\n'
}

/** A line of Litestream's JSON log: `time`, `level`, `msg` and the message's own members. */
export interface LitestreamLine {
  time: string
  level: string
  msg: string
  [member: string]: unknown
}

/** A JSON log line of Litestream's, or undefined for anything else it prints (before reading its configuration it logs plain text). */
export function parseLine (line: string): LitestreamLine | undefined {
  if (!line.startsWith('{')) return undefined
  try {
    const parsed = JSON.parse(line) as Partial<LitestreamLine>
    return typeof parsed.msg === 'string' && typeof parsed.level === 'string' ? parsed as LitestreamLine : undefined
  } catch {
    return undefined
  }
}

/**
 * The store's reason from a Litestream error: its first line, without the request and host ids
 * that differ at every attempt (`NoSuchBucket: The specified bucket does not exist`, `RequestError:
 * send request failed caused by: … connect: connection refused`).
 */
export function storeReason (error: unknown): string {
  const text = typeof error === 'string' && error !== '' ? error : 'unknown error'
  return text.split('\n').map((part) => part.trim()).filter((part) => part !== '' && !/^status code:/.test(part)).slice(0, 2).join(' ')
    // The request's URL (`Get "http://…/bucket?prefix=…": dial tcp …`) names the object tried.
    .replace(/\b(?:Get|Put|Post|Delete|Head) "[^"]*": /g, '')
    // Litestream's context (`client write: `, `cannot list generations: `) names the step tried.
    .replace(/^(?:[a-z][a-z ]*: )+(?=[A-Z])/, '')
}
