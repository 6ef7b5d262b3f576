import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Sqlite from 'better-sqlite3'
import type { BackupConfig } from '../../src/backups/backup.config.js'
import { litestreamBinary } from '../../src/backups/litestream.js'
import { Replication } from '../../src/backups/replication.js'
import { recordingLog, sleep, type Logged } from './fixtures.js'
import { waitFor } from '../helper.js'
import { parseRestoreTime, restore, RestoreError } from '../../src/backups/restore.js'
import { migrateToLatest, migrationNames } from '../../src/db/migrate.js'
import { openDatabase } from '../../src/db/database.js'
import { restoreArguments } from '../service-command.js'

// Replication and `npm run restore` with the real Litestream, on a database of the service's
// schema: the lag it reports, a Litestream that dies is started again, and every bad request of
// the restore (no backup, a bad time, an existing file, a damaged replica) is refused with a
// clear line and leaves nothing behind. The whole drill (a loss under load) is a system test
// (test/system/backup-sqlite.test.ts). Process-level and about SQLite only: the SQLite pass runs it.

const skip = process.env.TEST_DB === 'postgres' ? 'replication of the embedded database: the SQLite pass runs it' : false
const binary = litestreamBinary()!

describe('backups: replication and restore with Litestream', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-backup-'))
  const file = join(dir, 'data', 'app.db')
  const backup: BackupConfig = { target: { kind: 'file', dir: join(dir, 'replica') }, snapshotIntervalSeconds: 3600, retentionSeconds: 86400 }
  let db: Sqlite.Database
  let replication: Replication
  const logged = recordingLog()
  let firstUploadAt: Date

  before(async () => {
    const handle = openDatabase(`file:${file}`, { replicated: true })
    await migrateToLatest(handle.db, handle.dialect)
    await handle.db.destroy()
    db = new Sqlite(file)
    db.pragma('journal_mode = WAL')
    db.pragma('busy_timeout = 5000')
    db.pragma('wal_autocheckpoint = 0')
    replication = new Replication({ databaseFile: file, backup, binary, log: logged.log, checkMs: 100 })
    replication.start()
    await waitFor('the first upload', () => logged.lines.some((l) => l.msg === 'backup: snapshot written'))
    firstUploadAt = new Date()
  })
  after(async () => {
    await replication.stop()
    db.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const insertUser = (email: string): void => {
    db.prepare("insert into users (email, name, password_hash, role, created_at, updated_at) values (?, 'N', 'x', 'USER', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')").run(email)
  }
  /** The users' addresses in the live database now: what a restore of the newest state must hold. */
  const emails = (): string[] => db.prepare('select email from users order by id').all().map((r) => (r as { email: string }).email)
  // Uploads as Litestream reports them: each begins ('write …') and ends ('… written').
  const uploadLines = (): Logged[] => logged.lines.filter((l) => /^backup: (write (wal segment|snapshot)|(wal segment|snapshot) written)$/.test(l.msg))
  const uploaded = (): number => uploadLines().filter((l) => l.msg.endsWith(' written')).length
  /**
   * Nothing to upload and no upload under way (the last one reported has ended; one cut short by
   * a killed Litestream is followed by its successor's). An upload begun before a commit (the
   * first after start, say) may report its end after the commit, and the lag then reads 0 for a
   * moment with the commit not in the replica (src/backups/replication.ts, Lag).
   */
  const settled = (): boolean => (uploadLines().at(-1)?.msg.endsWith(' written') ?? false) && replication.lagSeconds() === 0
  const idle = async (): Promise<void> => { await waitFor('the replica idle', settled, 10_000) }
  /** Waits until Litestream has uploaded what was committed since `before` uploads had ended. */
  const uploadedSince = async (before: number): Promise<void> => { await waitFor('the upload', () => uploaded() > before && settled(), 5000) }
  /** Writes a user and waits until Litestream has uploaded it: the replica's newest state is then the database's. */
  const committedAndUploaded = async (email: string): Promise<string[]> => {
    await idle()
    const before = uploaded()
    insertUser(email)
    await uploadedSince(before)
    return emails()
  }

  test('a commit is uploaded within about a second: the lag rises above 0 and falls back to 0', async () => {
    await idle()
    await sleep(50)
    insertUser('lag@example.com')
    assert.ok(replication.lagSeconds() > 0, 'a commit not uploaded yet is lag')
    const committed = Date.now()
    await waitFor('the upload', () => replication.lagSeconds() === 0, 5000)
    assert.ok(Date.now() - committed < 2000, `uploaded within 2 s (took ${Date.now() - committed} ms)`)
  })

  test('a Litestream that stops uploading shows as lag; a Litestream that dies is started again', async () => {
    const pid = Number(readFileSync(`${file}-litestream.pid`, 'utf8'))
    process.kill(pid, 'SIGSTOP')
    try {
      insertUser('frozen@example.com')
      await sleep(1500)
      assert.ok(replication.lagSeconds() >= 1.4, `lag ${replication.lagSeconds()} s while Litestream is frozen`)
    } finally {
      process.kill(pid, 'SIGKILL')
    }
    await waitFor('a new Litestream', () => replication.running && Number(readFileSync(`${file}-litestream.pid`, 'utf8')) !== pid)
    assert.ok(logged.lines.some((l) => l.level === 'error' && /Litestream exited; starting it again/.test(l.msg)))
    await waitFor('the upload after the restart', () => replication.lagSeconds() === 0, 10_000)
  })

  test('a second Replication of the same database does not start a second Litestream', () => {
    const second = recordingLog()
    const other = new Replication({ databaseFile: file, backup, binary, log: second.log })
    other.start()
    assert.equal(other.running, false)
    assert.match(second.lines.find((l) => l.level === 'error')?.msg ?? '', /another Litestream already replicates this database/)
  })

  // Each test restores into a folder of its own and reads the live database's state itself, so
  // that none depends on what another wrote, restored or deleted, or on the order they run in.
  const outputsOf = (name: string): string => {
    const folder = join(dir, 'out', name)
    mkdirSync(folder, { recursive: true })
    return folder
  }
  const knownMigrations = migrationNames()

  test('the latest restore holds every commit; the file is new, checked and alone', async () => {
    const expected = await committedAndUploaded('latest@example.com')
    const outputs = outputsOf('latest')
    const output = join(outputs, 'latest.db')
    const result = restore({ output, at: undefined, backup, binary, knownMigrations })
    assert.equal(result.tables.users, expected.length)
    assert.equal(result.tables.kysely_migration, knownMigrations.length)
    assert.deepEqual(readdirSync(outputs), ['latest.db'])
    const restored = new Sqlite(output, { readonly: true })
    assert.deepEqual(restored.prepare('select email from users order by id').all().map((r) => (r as { email: string }).email), expected)
    restored.close()
  })

  test('a restore to a time brings back the state of that time', async () => {
    const kept = await committedAndUploaded('before-delete@example.com')
    const at = new Date()
    await sleep(1100)
    const before = uploaded()
    db.prepare('delete from users').run()
    await uploadedSince(before)
    const outputs = outputsOf('at-a-time')
    const output = join(outputs, 'before-delete.db')
    assert.equal(restore({ output, at, backup, binary, knownMigrations }).tables.users, kept.length)
    const restored = new Sqlite(output, { readonly: true })
    assert.deepEqual(restored.prepare('select email from users order by id').all().map((r) => (r as { email: string }).email), kept)
    restored.close()
    assert.equal(restore({ output: join(outputs, 'after-delete.db'), at: undefined, backup, binary, knownMigrations }).tables.users, 0)
  })

  test('a time after the last upload of an idle database restores its newest state', async () => {
    const newest = await committedAndUploaded('idle@example.com')
    const output = join(outputsOf('idle'), 'idle.db')
    await sleep(2100)
    assert.equal(restore({ output, at: new Date(Date.now() - 1000), backup, binary, knownMigrations }).tables.users, newest.length)
  })

  test('links planted in the output folder under the names a restore could stage at are never written through', () => {
    // Litestream restores to FILE.tmp and renames it to FILE, following a link at either name. A
    // file staged beside the output under a predictable name (.NAME.restoring-PID) could be
    // redirected by whoever may write in the output folder: here links for this process's pid
    // and for the pids the next processes get, the CLI's among them. FILE is a link to nowhere
    // (so Litestream finds no output there and goes on), FILE.tmp a link to a victim.
    const outputs = outputsOf('planted')
    const cliDir = join(outputs, 'planted-cli')
    const victim = join(dir, 'victim.txt')
    const nowhere = join(dir, 'nowhere.db')
    writeFileSync(victim, 'precious')
    mkdirSync(cliDir, { recursive: true })
    const recent = spawnSync('true').pid ?? process.pid
    const pids = new Set([process.pid, ...Array.from({ length: 600 }, (_, i) => recent - 50 + i)])
    const planted: string[] = []
    for (const [folder, name] of [[outputs, 'planted.db'], [cliDir, 'cli.db']] as const) {
      for (const pid of pids) {
        const staged = join(folder, `.${name}.restoring-${pid}`)
        symlinkSync(nowhere, staged)
        symlinkSync(victim, `${staged}.tmp`)
        planted.push(staged, `${staged}.tmp`)
      }
    }
    try {
      const output = join(outputs, 'planted.db')
      const result = restore({ output, at: undefined, backup, binary, knownMigrations })
      assert.equal(result.tables.kysely_migration, knownMigrations.length)
      assert.ok(lstatSync(output).isFile(), 'the output is a file of its own, not a link')
      const cli = spawnSync(process.execPath, restoreArguments(['--output', join(cliDir, 'cli.db')]),
        { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', BACKUP_URL: `file:${join(dir, 'replica')}` } })
      assert.equal(cli.status, 0, cli.stderr)
      assert.ok(lstatSync(join(cliDir, 'cli.db')).isFile())
      assert.equal(readFileSync(victim, 'utf8'), 'precious', 'the file a planted link points to is unchanged')
      assert.equal(existsSync(nowhere), false, 'nothing was created through a dangling planted link')
      for (const file of planted) assert.ok(lstatSync(file).isSymbolicLink(), `${file} is still the link planted`)
    } finally {
      for (const file of planted) rmSync(file, { force: true })
      rmSync(cliDir, { recursive: true, force: true })
      rmSync(join(outputs, 'planted.db'), { force: true })
    }
    assert.deepEqual(readdirSync(outputs).filter((f) => f.startsWith('.')), [], 'no temporary files left')
  })

  test('refused: a symbolic link at --output or beside it (-wal, -shm), even one to nowhere; what it points to is not created', () => {
    const outputs = outputsOf('linked')
    const output = join(outputs, 'linked.db')
    for (const at of [output, `${output}-wal`, `${output}-shm`]) {
      // Served later, SQLite would open the link at -wal or -shm and write through it.
      const nowhere = join(dir, `nowhere-${at.slice(-4)}`)
      symlinkSync(nowhere, at)
      try {
        assert.throws(() => restore({ output, at: undefined, backup, binary, knownMigrations }),
          (e: unknown) => e instanceof RestoreError && e.message.startsWith(`${at} exists; restore writes a new file and never overwrites one`))
        assert.equal(existsSync(nowhere), false)
        assert.ok(lstatSync(at).isSymbolicLink())
        assert.deepEqual(readdirSync(outputs), [basename(at)])
      } finally {
        unlinkSync(at)
      }
    }
  })

  test('refused: an existing output (never overwritten), a time before the oldest backup, a replica with nothing', () => {
    const outputs = outputsOf('refused')
    const existing = join(outputs, 'existing.db')
    writeFileSync(existing, 'mine')
    assert.throws(() => restore({ output: existing, at: undefined, backup, binary, knownMigrations }), (e: unknown) => e instanceof RestoreError && /exists; restore writes a new file and never overwrites one/.test(e.message))
    assert.equal(readFileSync(existing, 'utf8'), 'mine')
    writeFileSync(join(outputs, 'wal-left.db-wal'), '')
    assert.throws(() => restore({ output: join(outputs, 'wal-left.db'), at: undefined, backup, binary, knownMigrations }), /wal-left\.db-wal exists/)

    const before = new Date(firstUploadAt.getTime() - 60_000)
    const output = join(outputs, 'too-early.db')
    assert.throws(() => restore({ output, at: before, backup, binary, knownMigrations }), (e: unknown) => e instanceof RestoreError && /is before the oldest backup \(/.test(e.message))
    assert.equal(existsSync(output), false)

    const empty: BackupConfig = { ...backup, target: { kind: 'file', dir: join(dir, 'empty-replica') } }
    mkdirSync(join(dir, 'empty-replica'))
    assert.throws(() => restore({ output, at: undefined, backup: empty, binary, knownMigrations }), /the backup at .*empty-replica holds nothing \(no generation in the replica\)/)
    assert.deepEqual(readdirSync(outputs).filter((f) => f.startsWith('.')), [], 'no temporary files left')
  })

  test('refused: --at that is not an RFC 3339 time, or in the future', () => {
    const now = new Date('2026-11-26T12:00:00Z')
    assert.equal(parseRestoreTime('2026-11-26T11:59:00.250Z', now).toISOString(), '2026-11-26T11:59:00.250Z')
    assert.equal(parseRestoreTime('2026-11-26T13:59:00+02:00', now).toISOString(), '2026-11-26T11:59:00.000Z')
    for (const text of ['2026-11-26', 'yesterday', '2026-11-26 11:00:00', '2026-11-26T11:00:00', '2026-13-40T11:00:00Z', '']) {
      assert.throws(() => parseRestoreTime(text, now), /is not an RFC 3339 time/, text)
    }
    assert.throws(() => parseRestoreTime('2026-11-26T12:00:01Z', now), /is in the future/)
  })

  test('refused: --at that names no real day or time (30 February, 29 February of a common year, 24:00, an offset of 24 h)', () => {
    const now = new Date('2030-01-01T00:00:00Z')
    // The parser of the API's times: a day past the month's end is refused, not rolled over.
    for (const text of ['2026-02-30T00:00:00Z', '2026-02-29T00:00:00Z', '2026-04-31T12:00:00Z', '1900-02-29T00:00:00Z', '2026-11-26T24:00:00Z',
      '2026-11-26T11:00:00+24:00', '2026-11-26T11:00:00-24:00', '2026-11-26T11:00:00+05:60', '2026-11-26T23:59:60Z']) {
      assert.throws(() => parseRestoreTime(text, now), (e: unknown) => e instanceof RestoreError && e.message === `--at: "${text}" is not an RFC 3339 time like 2026-11-26T14:05:00Z`, text)
    }
    assert.equal(parseRestoreTime('2028-02-29T00:00:00Z', now).toISOString(), '2028-02-29T00:00:00.000Z')
    assert.equal(parseRestoreTime('2000-02-29T23:30:00-01:00', now).toISOString(), '2000-03-01T00:30:00.000Z')
    assert.equal(parseRestoreTime('2026-11-26t11:59:00.123456789z', now).toISOString(), '2026-11-26T11:59:00.123Z')
  })

  test('a damaged replica: the restore says so and writes nothing', () => {
    // A copy of the replica with its newest WAL segment cut short.
    const damagedDir = join(dir, 'damaged')
    spawnSync('cp', ['-a', join(dir, 'replica'), damagedDir])
    const [generation] = readdirSync(join(damagedDir, 'generations'))
    const walDir = join(damagedDir, 'generations', generation!, 'wal')
    const segments = readdirSync(walDir).sort()
    const newest = join(walDir, segments.at(-1)!)
    truncateSync(newest, Math.floor(statSync(newest).size / 2))
    const outputs = outputsOf('damaged')
    const output = join(outputs, 'damaged.db')
    assert.throws(() => restore({ output, at: undefined, backup: { ...backup, target: { kind: 'file', dir: damagedDir } }, binary, knownMigrations }),
      (e: unknown) => e instanceof RestoreError && /the backup could not be restored \(damaged or incomplete replica\?\): /.test(e.message))
    assert.equal(existsSync(output), false)
    assert.deepEqual(readdirSync(outputs), [], 'nothing left, temporary or not')
  })

  test('npm run restore: exit 1 with one line for a missing BACKUP_URL, a missing --output, an unknown option; 0 with the summary', async () => {
    const users = (await committedAndUploaded('cli@example.com')).length
    const outputs = outputsOf('cli')
    const cli = (args: string[], env: Record<string, string>): { status: number | null, stderr: string, stdout: string } =>
      spawnSync(process.execPath, restoreArguments(args), { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } })
    const noUrl = cli(['--output', join(outputs, 'cli.db')], {})
    assert.equal(noUrl.status, 1)
    assert.match(noUrl.stderr, /^restore: BACKUP_URL is not set/)
    const noOutput = cli([], { BACKUP_URL: `file:${backup.target.kind === 'file' ? backup.target.dir : ''}` })
    assert.equal(noOutput.status, 1)
    assert.match(noOutput.stderr, /^restore: --output is required/)
    const unknown = cli(['--output', 'x.db', '--force'], { BACKUP_URL: 'file:/tmp' })
    assert.equal(unknown.status, 1)
    assert.match(unknown.stderr, /^restore: Unknown option '--force'/)
    const badUrl = cli(['--output', 'x.db'], { BACKUP_URL: 'ftp://x/y' })
    assert.equal(badUrl.status, 1)
    assert.match(badUrl.stderr, /^restore: BACKUP_URL: must be file:DIR or s3:\/\/BUCKET\/PATH/)
    const future = cli(['--output', join(outputs, 'cli.db'), '--at', '2999-01-01T00:00:00Z'], { BACKUP_URL: `file:${join(dir, 'replica')}` })
    assert.equal(future.status, 1)
    assert.match(future.stderr, /^restore: --at: 2999-01-01T00:00:00.000Z is in the future/)
    const ok = cli(['--output', join(outputs, 'cli.db')], { BACKUP_URL: `file:${join(dir, 'replica')}` })
    assert.equal(ok.status, 0, ok.stderr)
    assert.match(ok.stdout, new RegExp(`^restored .*cli\\.db as of the newest state .* in \\d+\\.\\d s\\nintegrity ok; rows: .*\\busers ${users}\\b.*\\nfiles: 0 copied into file:data/files, 0 there already\\nserve it: DATABASE_URL=file:.*cli\\.db npm start\\n$`))
    assert.equal(existsSync(join(outputs, 'x.db')), false)
  })
})
