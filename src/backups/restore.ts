import { spawnSync } from 'node:child_process'
import { linkSync, lstatSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import SqliteDatabase from 'better-sqlite3'
import { parseTimestamp } from '../http/timestamps.js'
import { describeTarget, type BackupConfig } from './backup.config.js'
import { litestreamConfig, parseLine, storeReason } from './litestream.js'

// `npm run restore -- --output PATH [--at TIME]`: the database as it was at TIME (default: the
// newest state in the replica) written to a new file, checked, and only then put at PATH.
//
// Litestream's own restore is the engine; around it:
// - TIME is an RFC 3339 time in the past, read by the parser the API reads its times with
//   (http/timestamps.ts), field by field: 30 February is refused, not taken as 2 March.
//   Litestream's `-timestamp` picks what was uploaded by then, but refuses a time after a
//   generation's last upload (a database idle since then has not changed: its newest state is
//   the state at TIME) and one before its first; so the generation is chosen here, from
//   `litestream generations`.
// - The file is restored into a new private folder beside PATH (mkdtemp: a fresh name, mode
//   0700, on PATH's file system), where nobody else can have planted a link for Litestream's
//   files (the file, its `.tmp`, its WAL) to be written through; it is checked (`PRAGMA
//   integrity_check`, and every migration it has applied is one this service knows), then
//   linked to PATH. link() neither follows nor replaces anything at PATH, a symbolic link
//   included: an existing file is never overwritten, nor the file a link there points to.
// - Whatever fails, nothing is left at PATH, and the private folder is removed (rm removes
//   links, never what they point to).

export class RestoreError extends Error {}

export interface RestoreRequest {
  output: string
  /** Restore the state as of this time; undefined: the newest. */
  at: Date | undefined
  backup: BackupConfig
  binary: string
  /** The migrations this service knows; a restored file that applied another is refused. */
  knownMigrations: string[]
  now?: Date
}

export interface RestoreResult {
  output: string
  generation: string
  /** What was asked of Litestream: a time, or the newest state. */
  asOf: string
  seconds: number
  tables: Record<string, number>
}

/** Reads --at: an RFC 3339 time (with a zone) that is not in the future. */
export function parseRestoreTime (text: string, now = new Date()): Date {
  const instant = parseTimestamp(text)
  if (instant === undefined) throw new RestoreError(`--at: "${text}" is not an RFC 3339 time like 2026-11-26T14:05:00Z`)
  // Litestream takes times to the millisecond: a finer fraction is cut off.
  const at = new Date(instant.ms)
  if (at.getTime() > now.getTime()) throw new RestoreError(`--at: ${at.toISOString()} is in the future (it is now ${now.toISOString()})`)
  return at
}

interface Generation { name: string, start: Date, end: Date }

function litestream (binary: string, args: string[]): { ok: boolean, output: string } {
  const result = spawnSync(binary, args, { encoding: 'utf8', timeout: 60 * 60 * 1000 })
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`
  return { ok: result.status === 0, output }
}

/** Litestream's one-line reason from its output (its last error, else its last line). */
function reason (output: string): string {
  const errors = output.split('\n').map(parseLine).filter((line) => line?.level === 'ERROR').map((line) => storeReason(line!.error ?? line!.msg))
  return errors.at(-1) ?? output.trim().split('\n').at(-1) ?? 'unknown error'
}

/**
 * The replica's generations, oldest first (`litestream generations`: times to the second). A
 * replica it cannot list (no such bucket, refused credentials, the store down) Litestream
 * reports in an error line and an empty table, exiting 0: that is a failure here, not "nothing
 * yet".
 */
function generations (binary: string, config: string, databaseFile: string, where: string): Generation[] {
  const { ok, output } = litestream(binary, ['generations', '-config', config, databaseFile])
  const failed = output.split('\n').map(parseLine).some((line) => line?.level === 'ERROR')
  if (!ok || failed) throw new RestoreError(`cannot read the backup at ${where}: ${reason(output)}`)
  const found: Generation[] = []
  for (const line of output.split('\n').slice(1)) {
    if (line.startsWith('{')) continue
    const [, name, , start, end] = line.trim().split(/\s+/)
    if (name === undefined || start === undefined || end === undefined) continue
    found.push({ name, start: new Date(start), end: new Date(end) })
  }
  return found.sort((a, b) => a.start.getTime() - b.start.getTime())
}

export function restore (request: RestoreRequest): RestoreResult {
  const started = Date.now()
  const output = resolve(request.output)
  for (const file of [output, `${output}-wal`, `${output}-shm`]) {
    if (occupied(file)) throw new RestoreError(`${file} exists; restore writes a new file and never overwrites one (move it away, or pick another --output)`)
  }
  mkdirSync(dirname(output), { recursive: true })
  const work = mkdtempSync(join(tmpdir(), 'api-restore-'))
  let stage: string | undefined
  try {
    // Beside PATH, so that link() can put the file there (one file system); made 0700.
    stage = mkdtempSync(join(dirname(output), `.${basename(output)}.restoring-`))
    const staged = join(stage, basename(output))
    // Litestream finds the replica through a configuration that names a database; an empty file
    // stands for it (listing the generations reads the database's modification time).
    const config = join(work, 'litestream.yml')
    const named = join(work, 'app.db')
    writeFileSync(named, '')
    writeFileSync(config, litestreamConfig(named, request.backup))
    const where = describeTarget(request.backup.target)
    const found = generations(request.binary, config, named, where)
    if (found.length === 0) throw new RestoreError(`the backup at ${where} holds nothing (no generation in the replica): is BACKUP_URL the one the service replicates to?`)
    const { generation, timestamp } = pick(found, request.at)
    const args = ['restore', '-config', config, '-o', staged, '-generation', generation.name, ...(timestamp === undefined ? [] : ['-timestamp', timestamp]), named]
    let run = litestream(request.binary, args)
    // The last upload's time is printed to the second: a time within that second may lie after it.
    if (!run.ok && timestamp !== undefined && /no matching backups found/.test(run.output) && request.at!.getTime() >= generation.end.getTime()) {
      run = litestream(request.binary, args.filter((a, i) => a !== '-timestamp' && args[i - 1] !== '-timestamp'))
    }
    if (!run.ok) {
      if (/no snapshots available/.test(run.output)) throw new RestoreError(`no snapshot from before ${request.at?.toISOString()} is left in the backup (generation ${generation.name}); pick a later time`)
      throw new RestoreError(`the backup could not be restored (damaged or incomplete replica?): ${reason(run.output)}`)
    }
    const tables = check(staged, request.knownMigrations)
    // link() fails if anything is at the output by now, a dangling link included, and never
    // follows a link there: nothing is overwritten.
    try {
      linkSync(staged, output)
    } catch (error) {
      throw new RestoreError(`${output} could not be written: ${(error as Error).message}`)
    }
    return { output, generation: generation.name, asOf: timestamp ?? `the newest state (${generation.end.toISOString()})`, seconds: (Date.now() - started) / 1000, tables }
  } finally {
    rmSync(work, { recursive: true, force: true })
    if (stage !== undefined) rmSync(stage, { recursive: true, force: true })
  }
}

/**
 * Whether anything is at the path: lstat, since a symbolic link there is something (existsSync
 * follows it, and says false for one that points nowhere, which a write would then create).
 */
function occupied (file: string): boolean {
  try {
    return lstatSync(file, { throwIfNoEntry: false }) !== undefined
  } catch (error) {
    throw new RestoreError(`${file} cannot be checked: ${(error as Error).message}`)
  }
}

/** The generation to restore from and the time to ask for in it (undefined: its newest state). */
function pick (found: Generation[], at: Date | undefined): { generation: Generation, timestamp: string | undefined } {
  if (at === undefined) return { generation: found.at(-1)!, timestamp: undefined }
  const covering = found.filter((g) => g.start.getTime() <= at.getTime()).at(-1)
  if (covering === undefined) throw new RestoreError(`${at.toISOString()} is before the oldest backup (${found[0]!.start.toISOString()})`)
  // After the generation's last upload (to the second), its newest state is the state at that time.
  if (at.getTime() >= covering.end.getTime() + 1000) return { generation: covering, timestamp: undefined }
  return { generation: covering, timestamp: at.toISOString() }
}

/** Checks the restored file; returns the row count of each of its tables. */
function check (file: string, knownMigrations: string[]): Record<string, number> {
  const db = new SqliteDatabase(file)
  try {
    const integrity = db.pragma('integrity_check', { simple: true })
    if (integrity !== 'ok') throw new RestoreError(`the restored database fails its integrity check: ${String(integrity)}`)
    const hasMigrations = db.prepare("select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'").get() !== undefined
    if (!hasMigrations) throw new RestoreError('the restored database has no migration table: it is not a database of this service')
    const applied = (db.prepare('select name from kysely_migration order by name').all() as Array<{ name: string }>).map((r) => r.name)
    const unknown = applied.filter((name) => !knownMigrations.includes(name))
    if (unknown.length > 0) throw new RestoreError(`the restored database has migrations this version of the service does not know (${unknown.join(', ')}): restore with the version that wrote it`)
    const tables: Record<string, number> = {}
    // Litestream's own tables (_litestream_seq, _litestream_lock) come back too; they are harmless.
    for (const { name } of db.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like '%search%' order by name").all() as Array<{ name: string }>) {
      tables[name] = Number((db.prepare(`select count(*) as n from "${name}"`).get() as { n: number }).n)
    }
    // One file, no WAL beside it.
    db.pragma('wal_checkpoint(TRUNCATE)')
    return tables
  } finally {
    db.close()
  }
}
