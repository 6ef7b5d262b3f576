import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { Counter, Gauge, type Registry } from 'prom-client'
import { describeTarget, type BackupConfig } from './backup.config.js'
import { litestreamConfig, parseLine, storeReason, type LitestreamLine } from './litestream.js'

// Continuous replication of the SQLite database: the service runs Litestream as a child process
// (`litestream replicate`) beside itself and watches it.
//
// - Litestream runs through `setpriv --pdeathsig TERM`, so the kernel sends it SIGTERM when the
//   service dies, however it dies (a SIGKILL too): it then uploads what it has not yet and exits.
//   Two Litestreams on one database and one replica lose backup data silently, so an orphan
//   must never outlive the service into its next start; a pid file also refuses to start a
//   second one beside a Litestream that is still running.
// - It is watched, never trusted to stay up: when it exits on its own it is started again
//   (after 1 s, doubling to 30 s). Replication failing never stops the API: the failure shows
//   in the log, in `backup_replication_lag_seconds` and in a warning once the lag passes 10 s.
// - An unreachable replica (a store down, a wrong bucket or credentials) makes Litestream report
//   an error at every attempt, which it goes on making: the service logs the first as one error
//   line with the store's reason, a changed reason again, and a line when uploads resume; the
//   repeats only count in `backup_replication_errors_total` (a store down for an hour would
//   otherwise write thousands of lines). Commits wait in the local WAL meanwhile.
// - Litestream retries a failed upload only at the database's next commit: an idle database
//   whose store came back would stay behind in the replica. So while the replica is failing and
//   missing commits, Litestream is restarted every 15 s; a start uploads what is missing.
// - Lag: how long the replica has been missing a commit. A commit changes the WAL file; an
//   upload is a line of Litestream's log. When the WAL changed after the last upload, the lag
//   is the time since that upload; otherwise nothing is missing and the lag is 0. (Litestream
//   reads the WAL as an upload starts, so a commit made during an upload may count as uploaded
//   for one sync interval, a second.)
// - On shutdown the service closes its database first, then stops Litestream, whose final sync
//   uploads the last commits (docs/RELIABILITY.md, Backups and restore).

export interface ReplicationLog {
  debug: (obj: object, msg: string) => void
  info: (obj: object, msg: string) => void
  warn: (obj: object, msg: string) => void
  error: (obj: object, msg: string) => void
}

export interface ReplicationOptions {
  databaseFile: string
  backup: BackupConfig
  binary: string
  log: ReplicationLog
  registry?: Registry
  /** How often the lag is checked against the warning threshold. */
  checkMs?: number
}

const LAG_WARNING_SECONDS = 10
const RESTART_MIN_MS = 1000
const RESTART_MAX_MS = 30_000
/** How long a stopping Litestream may take for its final upload before it is killed. */
const STOP_LIMIT_MS = 30_000
/** How often a Litestream whose uploads fail is restarted, to try again without waiting for a commit. */
const RETRY_MS = 15_000
const SETPRIV = '/usr/bin/setpriv'

/** Litestream's messages that mean data reached the replica. */
const UPLOADS = new Set(['wal segment written', 'snapshot written'])
/** Routine messages, logged at debug: an upload a second would flood the service's log. */
const ROUTINE = new Set(['wal segment written', 'write wal segment', 'write snapshot'])

const alive = (pid: number): boolean => { try { process.kill(pid, 0); return true } catch { return false } }

export class Replication {
  readonly #options: ReplicationOptions
  readonly #configDir: string
  readonly #pidFile: string
  #child: ChildProcess | undefined
  #exited: Promise<void> = Promise.resolve()
  #stopping = false
  #restartMs = RESTART_MIN_MS
  #restartTimer: NodeJS.Timeout | undefined
  #checkTimer: NodeJS.Timeout | undefined
  #startedAt = Date.now()
  #lastUploadAt: number | undefined
  #warned = false
  /** The reason of the replica's current failure; undefined while uploads succeed. */
  #failing: { reason: string, since: number } | undefined
  /** When Litestream was last started; a failing one is restarted RETRY_MS after it. */
  #spawnedAt = 0
  /** Set while Litestream is restarted on purpose (a retry), so that its exit is not an error. */
  #retrying = false
  readonly #errors: Counter | undefined

  constructor (options: ReplicationOptions) {
    this.#options = options
    this.#configDir = mkdtempSync(join(tmpdir(), 'api-litestream-'))
    this.#pidFile = `${options.databaseFile}-litestream.pid`
    writeFileSync(join(this.#configDir, 'litestream.yml'), litestreamConfig(options.databaseFile, options.backup))
    const { registry } = options
    if (registry !== undefined) {
      const gauge = (name: string, help: string, value: () => number): void => {
        registry.registerMetric(new Gauge({ name, help, registers: [], collect () { this.set(value()) } }))
      }
      gauge('backup_replication_lag_seconds', 'How long the backup replica has been missing a commit (0: it holds every commit).', () => this.lagSeconds())
      gauge('backup_replication_up', '1 while the replication process (Litestream) runs, else 0.', () => this.running ? 1 : 0)
      gauge('backup_last_upload_timestamp_seconds', 'When data last reached the backup replica (Unix time); 0 before the first upload.', () => (this.#lastUploadAt ?? 0) / 1000)
      this.#errors = new Counter({ name: 'backup_replication_errors_total', help: 'Errors reported by the replication process.', registers: [registry] })
    }
  }

  get running (): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null
  }

  /** What an operator is told (GET /v1/system): the lag, and why the copy fails now (null while it succeeds). */
  state (): { lagSeconds: number, lastError: string | null } {
    return { lagSeconds: this.lagSeconds(), lastError: this.#failing?.reason ?? (this.running || this.#stopping ? null : 'Litestream is not running') }
  }

  /** Seconds the replica has been missing a commit; 0 when it holds every one. */
  lagSeconds (now = Date.now()): number {
    const since = this.#lastUploadAt ?? this.#startedAt
    return this.#lastChangeAt() > since ? Math.max(0, (now - since) / 1000) : 0
  }

  /** When the database last changed: its WAL file's modification time (the file's own, without one). */
  #lastChangeAt (): number {
    const { databaseFile } = this.#options
    for (const file of [`${databaseFile}-wal`, databaseFile]) {
      try {
        return statSync(file).mtimeMs
      } catch {
        // Not there (yet): the next one.
      }
    }
    return 0
  }

  start (): void {
    const { log } = this.#options
    const other = this.#runningLitestream()
    if (other !== undefined) {
      log.error({ litestreamPid: other, pidFile: this.#pidFile }, 'backup: another Litestream already replicates this database; not starting a second one (two lose backup data): stop the other service first')
      return
    }
    this.#startedAt = Date.now()
    this.#spawn()
    this.#checkTimer = setInterval(() => { this.#checkLag() }, this.#options.checkMs ?? 1000)
    this.#checkTimer.unref()
  }

  /** The pid of a Litestream named by the pid file that still runs, if any. */
  #runningLitestream (): number | undefined {
    try {
      const pid = Number(readFileSync(this.#pidFile, 'utf8').trim())
      if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      return command.includes('litestream') ? pid : undefined
    } catch {
      return undefined
    }
  }

  #spawn (): void {
    const { binary, log, backup } = this.#options
    const args = ['replicate', '-config', join(this.#configDir, 'litestream.yml')]
    // setpriv (util-linux) asks the kernel for SIGTERM to Litestream when this process dies.
    const child = existsSync(SETPRIV)
      ? spawn(SETPRIV, ['--pdeathsig', 'TERM', '--', binary, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    this.#child = child
    this.#spawnedAt = Date.now()
    if (child.pid !== undefined) writeFileSync(this.#pidFile, `${child.pid}\n`)
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream! }).on('line', (line) => { this.#onLine(line) })
    }
    this.#exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        if (this.#child === child) this.#child = undefined
        try { unlinkSync(this.#pidFile) } catch { /* already gone */ }
        if (this.#stopping) {
          resolve()
          return
        }
        if (this.#retrying) {
          this.#retrying = false
          log.debug({ code, signal }, 'backup: Litestream restarted to retry its uploads')
          this.#spawn()
          resolve()
          return
        }
        log.error({ code, signal, restartInMs: this.#restartMs }, 'backup: Litestream exited; starting it again')
        this.#restartTimer = setTimeout(() => {
          this.#restartTimer = undefined
          if (!this.#stopping) this.#spawn()
        }, this.#restartMs)
        this.#restartTimer.unref()
        this.#restartMs = Math.min(this.#restartMs * 2, RESTART_MAX_MS)
        resolve()
      })
      child.once('error', (error) => { log.error({ err: error }, 'backup: Litestream could not be started') })
    })
    log.info({ litestreamPid: child.pid, target: describeTarget(backup.target) }, 'backup: replicating the database (Litestream)')
  }

  #onLine (text: string): void {
    const { log } = this.#options
    const line = parseLine(text)
    if (line === undefined) {
      if (text.trim() !== '') log.warn({ litestream: text }, 'backup: Litestream')
      return
    }
    if (UPLOADS.has(line.msg)) {
      const at = Date.parse(line.time)
      this.#lastUploadAt = Number.isNaN(at) ? Date.now() : at
      // Running and uploading: a later crash is started again after a second, not the backoff reached.
      this.#restartMs = RESTART_MIN_MS
      if (this.#failing !== undefined) {
        log.info({ failedForSeconds: Math.round((Date.now() - this.#failing.since) / 1000) }, 'backup: the replica is written again')
        this.#failing = undefined
      }
    }
    const { level, msg } = line
    const rest: Partial<LitestreamLine> = { ...line }
    delete rest.time; delete rest.level; delete rest.msg
    if (level === 'ERROR' && this.#stopping && msg === 'error closing db' && /context canceled/.test(String(line.error))) {
      // Litestream 0.3.13 reports this when its final sync ends in a checkpoint; the upload was made.
      log.info({ litestream: rest }, 'backup: Litestream stopped (its final checkpoint was cut short; the data was uploaded)')
    } else if (level === 'ERROR') {
      this.#errors?.inc()
      const reason = storeReason(line.error)
      if (this.#failing === undefined || this.#failing.reason !== reason) {
        log.error({ litestream: rest, target: describeTarget(this.#options.backup.target) }, `backup: the replica cannot be written: ${reason} (the API goes on; commits wait in the local WAL and are uploaded once it answers)`)
        this.#failing = { reason, since: this.#failing?.since ?? Date.now() }
      } else {
        log.debug({ litestream: rest }, `backup: ${msg}`)
      }
    } else if (level === 'WARN') {
      log.warn({ litestream: rest }, `backup: ${msg}`)
    } else if (ROUTINE.has(msg)) {
      log.debug({ litestream: rest }, `backup: ${msg}`)
    } else {
      log.info({ litestream: rest }, `backup: ${msg}`)
    }
  }

  #checkLag (): void {
    const lag = this.lagSeconds()
    if (lag > LAG_WARNING_SECONDS && !this.#warned) {
      this.#warned = true
      this.#options.log.warn({ lagSeconds: Math.round(lag), running: this.running }, `backup: the replica has been missing commits for over ${LAG_WARNING_SECONDS} s`)
    } else if (lag <= LAG_WARNING_SECONDS && this.#warned) {
      this.#warned = false
      this.#options.log.info({}, 'backup: the replica has caught up')
    }
    if (this.#failing !== undefined && lag > 0 && this.running && !this.#retrying && Date.now() - this.#spawnedAt >= RETRY_MS) {
      this.#retrying = true
      this.#child!.kill('SIGTERM')
    }
  }

  /**
   * Stops Litestream after its final upload (call it once the database is closed): SIGTERM,
   * then SIGKILL if it has not exited within 30 s.
   */
  async stop (): Promise<void> {
    this.#stopping = true
    clearInterval(this.#checkTimer)
    clearTimeout(this.#restartTimer)
    const child = this.#child
    if (child !== undefined && this.running) {
      child.kill('SIGTERM')
      const limit = setTimeout(() => { child.kill('SIGKILL') }, STOP_LIMIT_MS)
      await this.#exited
      clearTimeout(limit)
    }
    rmSync(this.#configDir, { recursive: true, force: true })
  }
}
