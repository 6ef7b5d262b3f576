import { fileUrlFolder } from './file-url.js'
import { isIP } from 'node:net'
import { backupConfig, BackupConfigError, type BackupConfig } from '../backups/backup.config.js'
import { WHATWG_EMAIL } from '../http/email.js'
import { parseAllowHosts } from '../webhooks/allow-hosts.js'
import { OidcConfigError, parseOidcProviders, type OidcConfig } from '../oidc/oidc.config.js'

// Configuration comes only from the environment (docs/api.md). It is parsed once at
// start-up; a bad value stops the process with one line naming the variable and why.

export interface Config {
  port: number
  host: string
  databaseUrl: string
  /**
   * The key that encrypts secrets kept at rest (TOTP secrets), 32 bytes (SECRET_KEY, 64 hex
   * characters). Undefined: on SQLite a key generated once and kept in `secret.key` beside the
   * database file; on PostgreSQL none, since every instance must share one (src/mfa/secret-key.ts).
   */
  secretKey: Buffer | undefined
  adminEmail: string | undefined
  adminPassword: string | undefined
  sessionTtlSeconds: number
  /**
   * How long after its log-in (or its last re-authentication) a session may change how the
   * account is reached or signed in to: its address, its second factor, its keys, its providers,
   * its deletion.
   */
  reauthenticationSeconds: number
  bodyLimitBytes: number
  logLevel: string
  corsOrigins: string[]
  rateLimitPerMinute: number
  loginFailuresPerEmail: number
  loginFailuresPerClient: number
  loginFailuresPerAccount: number
  signupsPerClientPerHour: number
  metricsHost: string
  metricsPort: number
  /** Addresses or CIDRs of the proxies whose X-Forwarded-For is believed (empty: none). */
  trustProxy: string[]
  /** How long a shutdown keeps serving (readiness 503, `Connection: close`) before it stops accepting. */
  shutdownGraceMs: number
  /** PostgreSQL: the hot queries run as named prepared statements (off for PgBouncer before 1.21 in transaction mode). */
  pgPreparedStatements: boolean
  /** How long events (and finished webhook deliveries) are kept. */
  eventRetentionDays: number
  webhooks: WebhookConfig
  /** Continuous replication of the embedded database (BACKUP_URL); undefined: none. */
  backup: BackupConfig | undefined
  /** The service's own address as people reach it (links in mails to its pages); no trailing slash. */
  publicUrl: string
  /** The client application's address, whose pages the links in mails open instead; no trailing slash. */
  appUrl: string | undefined
  /** A log-in to an account whose address is not verified is refused (403 EMAIL_NOT_VERIFIED). */
  requireEmailVerification: boolean
  mail: MailConfig
  /** Identity providers people may sign in with (OIDC_PROVIDERS); none by default. */
  oidc: OidcConfig
  files: FilesConfig
}

export interface FilesConfig {
  /** Where uploaded files' bytes live (STORAGE_URL). */
  storage: StorageTarget
  /** The largest upload taken (FILE_MAX_BYTES). */
  maxBytes: number
  /** The AWS_* variables an S3 client reads (the storage's, the backup's copy of the files). */
  aws: Record<string, string | undefined>
  /** How long an S3 store may take to connect, to begin a read's answer, and between another operation's bytes (STORAGE_TIMEOUT_MS). */
  storeTimeoutMs: number
}

export type StorageTarget =
  | { kind: 'folder', /** Absolute. */ dir: string, /** As given, for the status and the logs. */ url: string }
  | { kind: 's3', bucket: string, /** Without leading or trailing slash; empty for the bucket's root. */ prefix: string, url: string }

export interface MailConfig {
  /** smtp:// or smtps:// with credentials; undefined: each mail is written as a .eml file in `dir`. */
  smtpUrl: string | undefined
  /** The From of every mail: an address, or `Name <address>`. */
  from: string
  dir: string
  /** Delay before each attempt, in milliseconds: the first, then each retry; past the last, the mail is failed. */
  retryScheduleMs: number[]
  /** How often the sender looks for mail it was not told of (retries, other instances' mail). */
  pollMs: number
  /** Mails asked for (reset, verification) per address: a minute's and an hour's worth. */
  perAddressPerMinute: number
  perAddressPerHour: number
  /** Failed tokens per client address a minute (verifications and resets). */
  tokenFailuresPerClientPerMinute: number
}

export interface WebhookConfig {
  /** Hosts, addresses and CIDR ranges a webhook may target over http and on private addresses. */
  allowHosts: string[]
  /** Delay before each attempt, in milliseconds: the first (normally 0), then each retry. */
  retryScheduleMs: number[]
  /** How long an attempt may take, connection to last byte of the answer. */
  timeoutMs: number
  /** An endpoint whose every delivery has failed for this long is disabled. */
  disableAfterMs: number
  /** How often the dispatcher looks for work it was not told of (retries, other instances' events). */
  pollMs: number
}

const DEFAULT_RETRY_SCHEDULE = '0,5,300,1800,7200,18000,36000,36000'
// A mail is tried for about 24 hours (the last attempt 23.9 h after the first), then failed.
const DEFAULT_MAIL_RETRY_SCHEDULE = '0,10,60,300,900,1800,3600,7200,14400,28800,28800'

function retrySchedule (env: Env, name: string, fallback: string): number[] {
  const raw = env[name] === undefined || env[name] === '' ? fallback : env[name]
  const entries = raw.split(',').map((e) => e.trim())
  if (entries.length > 20 || entries.some((e) => !/^\d{1,6}(\.\d{1,3})?$/.test(e))) {
    throw new ConfigError(name, `must be 1 to 20 delays in seconds, comma-separated (like ${fallback}), got "${raw}"`)
  }
  return entries.map((e) => Math.round(Number(e) * 1000))
}

/** An http(s) base address without query or fragment, its trailing slash dropped. */
function baseUrl (env: Env, name: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigError(name, `is not a URL like https://app.example.com, got "${raw}"`)
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new ConfigError(name, `must be an http:// or https:// address without credentials, query or fragment, got "${raw}"`)
  }
  return url.href.replace(/\/+$/, '')
}

/** Where the service itself is reached, by default: its own HOST and PORT (an unspecified HOST, as 0.0.0.0, as localhost). */
function ownUrl (host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? 'localhost' : isIP(host) === 6 ? `[${host}]` : host
  return `http://${name}:${port}`
}

// Never echoes the value: it may hold the SMTP password.
function smtpUrl (env: Env): string | undefined {
  const raw = env.SMTP_URL
  if (raw === undefined || raw === '') return undefined
  const url = URL.canParse(raw) ? new URL(raw) : undefined
  if (url === undefined || (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || url.hostname === '' || url.hash !== '') {
    throw new ConfigError('SMTP_URL', 'must be smtp://user:password@host:port (or smtps:// for TLS from the first byte)')
  }
  return raw
}

const MAIL_FROM = /^(?:[^<>\r\n"]*<([^<>\s]+)>|([^<>\s]+))$/

function mailFrom (env: Env): string {
  const raw = env.MAIL_FROM === undefined || env.MAIL_FROM === '' ? 'no-reply@localhost' : env.MAIL_FROM
  const match = MAIL_FROM.exec(raw.trim())
  const address = match?.[1] ?? match?.[2]
  if (address === undefined || !WHATWG_EMAIL.test(address)) throw new ConfigError('MAIL_FROM', `must be an e-mail address or Name <address>, got "${raw}"`)
  return raw.trim()
}

function backup (env: Env, database: string): BackupConfig | undefined {
  try {
    return backupConfig(env, database)
  } catch (error) {
    if (error instanceof BackupConfigError) throw new ConfigError(error.variable, error.message.slice(error.variable.length + 2))
    throw error
  }
}

function oidcProviders (env: Env): OidcConfig['providers'] {
  try {
    return parseOidcProviders(env.OIDC_PROVIDERS)
  } catch (error) {
    if (error instanceof OidcConfigError) throw new ConfigError('OIDC_PROVIDERS', error.message)
    throw error
  }
}

function allowHosts (env: Env): string[] {
  try {
    return parseAllowHosts(env.WEBHOOK_ALLOW_HOSTS)
  } catch (error) {
    throw new ConfigError('WEBHOOK_ALLOW_HOSTS', (error as Error).message)
  }
}

export class ConfigError extends Error {
  readonly variable: string

  constructor (variable: string, reason: string) {
    super(`${variable}: ${reason}`)
    this.name = 'ConfigError'
    this.variable = variable
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

type Env = Record<string, string | undefined>

const AWS_VARIABLES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL']

/** The AWS_* variables an S3 client reads. */
export function awsVariables (env: Env): Record<string, string | undefined> {
  return Object.fromEntries(AWS_VARIABLES.map((name) => [name, env[name]]))
}

/** STORAGE_TIMEOUT_MS: how long an S3 store may take to connect, to begin a read's answer, and between another operation's bytes. */
export function storeTimeout (env: Env): number {
  return integer(env, 'STORAGE_TIMEOUT_MS', 10_000, 100, 600_000)
}

/** STORAGE_URL: `file:DIR` (relative to the working folder, or `file:///abs/dir`), or `s3://BUCKET/PREFIX` (credentials from the AWS_* variables). */
export function storageTarget (env: Env): StorageTarget {
  const raw = env.STORAGE_URL === undefined || env.STORAGE_URL === '' ? 'file:data/files' : env.STORAGE_URL
  if (raw.startsWith('file:')) {
    const folder = fileUrlFolder(raw)
    if ('dir' in folder) return { kind: 'folder', dir: folder.dir, url: raw }
    throw new ConfigError('STORAGE_URL', {
      host: `"${raw}" names a host; use file:DIR or file:///absolute/dir`,
      encoding: `"${raw}" is not valid percent-encoding`,
      empty: 'file: needs a folder, like file:data/files or file:///var/lib/api/files'
    }[folder.refused])
  }
  if (raw.startsWith('s3://')) {
    if (/[@?#]/.test(raw)) throw new ConfigError('STORAGE_URL', 'an s3:// URL is s3://BUCKET/PREFIX alone: credentials go in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, the region in AWS_REGION, an S3-compatible endpoint in AWS_ENDPOINT_URL_S3')
    const [bucket = '', ...rest] = raw.slice('s3://'.length).split('/')
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new ConfigError('STORAGE_URL', `"${bucket}" is not an S3 bucket name`)
    const prefix = rest.filter((part) => part !== '').join('/')
    return { kind: 's3', bucket, prefix, url: `s3://${bucket}${prefix === '' ? '' : `/${prefix}`}` }
  }
  throw new ConfigError('STORAGE_URL', `must be file:DIR or s3://BUCKET/PREFIX, got "${raw.replace(/\/\/[^/]*@/, '//***@')}"`)
}

function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(name, `must be from ${min} to ${max}, got ${raw}`)
  return value
}

function flag (env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (raw !== 'true' && raw !== 'false') throw new ConfigError(name, `must be true or false, got "${raw}"`)
  return raw === 'true'
}

function databaseUrl (env: Env): string {
  const raw = env.DATABASE_URL
  if (raw === undefined || raw === '') return 'file:./data/app.db'
  if (raw.startsWith('file:') && raw.length > 'file:'.length) return raw
  if (/^postgres(ql)?:\/\//.test(raw)) {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      throw new ConfigError('DATABASE_URL', 'is not a valid postgres:// URL')
    }
    if (url.hostname === '' && !url.searchParams.has('host')) throw new ConfigError('DATABASE_URL', 'names no host')
    return raw
  }
  throw new ConfigError('DATABASE_URL', 'must be file:PATH (embedded SQLite) or postgres://… (PostgreSQL)')
}

// Never echoes the value: it is the key itself.
function secretKey (env: Env): Buffer | undefined {
  const raw = env.SECRET_KEY
  if (raw === undefined || raw === '') return undefined
  const hex = raw.trim()
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    throw new ConfigError('SECRET_KEY', 'must be 32 bytes written as 64 hexadecimal characters (like the output of `openssl rand -hex 32`)')
  }
  return Buffer.from(hex, 'hex')
}

// proxy-addr's names for the loopback, link-local and private ranges are accepted too.
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

function trustProxy (env: Env): string[] {
  const entries = (env.TRUST_PROXY ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '')
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.has(entry)) continue
    const [address = '', prefix, ...rest] = entry.split('/')
    const family = isIP(address)
    const maxPrefix = family === 4 ? 32 : 128
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= maxPrefix)
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new ConfigError('TRUST_PROXY', `"${entry}" is not an IP address or CIDR range (like 10.0.0.0/8), nor loopback, linklocal or uniquelocal`)
    }
  }
  return entries
}

export function loadConfig (env: Env = process.env): Config {
  const logLevel = env.LOG_LEVEL === undefined || env.LOG_LEVEL === '' ? 'info' : env.LOG_LEVEL
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`)
  }
  const adminEmail = env.ADMIN_EMAIL === '' ? undefined : env.ADMIN_EMAIL
  const adminPassword = env.ADMIN_PASSWORD === '' ? undefined : env.ADMIN_PASSWORD
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    throw new ConfigError(adminEmail === undefined ? 'ADMIN_EMAIL' : 'ADMIN_PASSWORD',
      'must be set together with ' + (adminEmail === undefined ? 'ADMIN_PASSWORD' : 'ADMIN_EMAIL'))
  }
  // The same address rule as sign-up (WHATWG), so the admin can log in like anyone else.
  if (adminEmail !== undefined && !WHATWG_EMAIL.test(adminEmail)) {
    throw new ConfigError('ADMIN_EMAIL', 'is not a valid e-mail address')
  }
  if (adminPassword !== undefined && ([...adminPassword].length < 8 || [...adminPassword].length > 50)) {
    throw new ConfigError('ADMIN_PASSWORD', 'must be 8 to 50 characters, like every password')
  }
  const corsOrigins = (env.CORS_ORIGINS ?? '').split(',').map((o) => o.trim()).filter((o) => o !== '')
  for (const origin of corsOrigins) {
    if (!/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new ConfigError('CORS_ORIGINS', `"${origin}" is not an origin like https://app.example.com`)
    }
  }
  const host = env.HOST === undefined || env.HOST === '' ? '127.0.0.1' : env.HOST
  const database = databaseUrl(env)
  const port = integer(env, 'PORT', 3000, 0, 65535)
  return {
    port,
    host,
    databaseUrl: database,
    secretKey: secretKey(env),
    adminEmail,
    adminPassword,
    sessionTtlSeconds: integer(env, 'SESSION_TTL_SECONDS', 86400, 1, 31536000),
    reauthenticationSeconds: integer(env, 'REAUTHENTICATION_SECONDS', 600, 1, 31536000),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 1048576, 1, 1073741824),
    logLevel,
    corsOrigins,
    rateLimitPerMinute: integer(env, 'RATE_LIMIT_PER_MINUTE', 600, 0, 1000000),
    loginFailuresPerEmail: integer(env, 'LOGIN_FAILURES_PER_EMAIL', 10, 1, 1000000),
    loginFailuresPerClient: integer(env, 'LOGIN_FAILURES_PER_CLIENT', 100, 1, 1000000),
    loginFailuresPerAccount: integer(env, 'LOGIN_FAILURES_PER_ACCOUNT', 100, 1, 1000000),
    signupsPerClientPerHour: integer(env, 'SIGNUPS_PER_CLIENT_PER_HOUR', 20, 1, 1000000),
    // /metrics is served only here, never on the public listener (METRICS_PORT=0: nowhere).
    metricsHost: env.METRICS_HOST === undefined || env.METRICS_HOST === '' ? '127.0.0.1' : env.METRICS_HOST,
    metricsPort: integer(env, 'METRICS_PORT', 9464, 0, 65535),
    trustProxy: trustProxy(env),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 5000, 0, 600000),
    pgPreparedStatements: flag(env, 'PG_PREPARED_STATEMENTS', true),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 30, 1, 3650),
    webhooks: {
      allowHosts: allowHosts(env),
      retryScheduleMs: retrySchedule(env, 'WEBHOOK_RETRY_SCHEDULE', DEFAULT_RETRY_SCHEDULE),
      timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 15000, 100, 120000),
      disableAfterMs: integer(env, 'WEBHOOK_DISABLE_AFTER_SECONDS', 432000, 1, 31536000) * 1000,
      pollMs: integer(env, 'WEBHOOK_POLL_MS', 1000, 10, 600000)
    },
    backup: backup(env, database),
    publicUrl: baseUrl(env, 'PUBLIC_URL') ?? ownUrl(host, port),
    appUrl: baseUrl(env, 'APP_URL'),
    requireEmailVerification: flag(env, 'REQUIRE_EMAIL_VERIFICATION', false),
    mail: {
      smtpUrl: smtpUrl(env),
      from: mailFrom(env),
      dir: env.MAIL_DIR === undefined || env.MAIL_DIR === '' ? 'data/mail' : env.MAIL_DIR,
      retryScheduleMs: retrySchedule(env, 'MAIL_RETRY_SCHEDULE', DEFAULT_MAIL_RETRY_SCHEDULE),
      pollMs: integer(env, 'MAIL_POLL_MS', 1000, 10, 600000),
      perAddressPerMinute: integer(env, 'MAIL_PER_ADDRESS_PER_MINUTE', 1, 1, 1000000),
      perAddressPerHour: integer(env, 'MAIL_PER_ADDRESS_PER_HOUR', 5, 1, 1000000),
      tokenFailuresPerClientPerMinute: integer(env, 'TOKEN_FAILURES_PER_CLIENT_PER_MINUTE', 20, 1, 1000000)
    },
    oidc: {
      providers: oidcProviders(env),
      timeoutSeconds: integer(env, 'OIDC_TIMEOUT_SECONDS', 10, 1, 120)
    },
    files: {
      storage: storageTarget(env),
      maxBytes: integer(env, 'FILE_MAX_BYTES', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
      aws: awsVariables(env),
      storeTimeoutMs: storeTimeout(env)
    }
  }
}
