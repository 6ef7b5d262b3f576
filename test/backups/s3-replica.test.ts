import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import Sqlite from 'better-sqlite3'
import { Registry } from 'prom-client'
import type { BackupConfig } from '../../src/backups/backup.config.js'
import { litestreamBinary, storeReason } from '../../src/backups/litestream.js'
import { Replication } from '../../src/backups/replication.js'
import { type Logged, recordingLog, sleep } from './fixtures.js'
import { waitFor } from '../helper.js'
import { openDatabase } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { BUCKET, startS3Store, startSigningS3Store, type S3Store } from '../support/s3-store.js'
import { restoreArguments } from '../service-command.js'

// Replication to an S3 bucket and `npm run restore` from one, with the real Litestream and S3 API
// servers on loopback (s3-store.ts), and the faults an operator meets: the store down at start
// and back, a bucket that does not exist, a path with nothing in it, wrong credentials. Each is
// one clear line (an error in the service's log; `restore:` and exit 1 from the command), the
// replication goes on trying, and nothing reports success that did not happen. The drill (a
// machine lost under load, restored from the bucket) is a system test (test/system/backup-sqlite).

const skip = process.env.TEST_DB === 'postgres' ? 'replication of the embedded database: the SQLite pass runs it' : false
const binary = litestreamBinary()!

const s3 = (bucket: string, path: string): BackupConfig => ({ target: { kind: 's3', bucket, path }, snapshotIntervalSeconds: 3600, retentionSeconds: 86400 })

interface Run { status: number | null, stderr: string, stdout: string }

/**
 * `npm run restore` with only these variables (and PATH, HOME). Asynchronously: the store runs
 * in this process, so waiting synchronously would keep it from answering.
 */
async function restoreCli (output: string, env: Record<string, string>): Promise<Run> {
  return await new Promise((resolve) => {
    const child = execFile(process.execPath, restoreArguments(['--output', output]), {
      encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, timeout: 120_000
    }, (_error, stdout, stderr) => { resolve({ status: child.exitCode, stdout, stderr }) })
  })
}

/** Exit 1 and exactly one line on stderr, matching `line`; nothing written at `output`. */
function assertRefused (result: Run, line: RegExp, output: string): void {
  assert.equal(result.status, 1, result.stdout + result.stderr)
  assert.equal(result.stdout, '')
  assert.equal(result.stderr.split('\n').filter((l) => l !== '').length, 1, result.stderr)
  assert.match(result.stderr, line)
  assert.equal(existsSync(output), false)
}

describe('backups in an S3 bucket: replication, restore and the store\'s faults', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-backup-s3-'))
  let store: S3Store
  const running: Replication[] = []
  const open: Sqlite.Database[] = []

  before(async () => {
    store = await startS3Store()
    // Litestream, started by Replication, reads the endpoint and the credentials from the environment.
    Object.assign(process.env, store.env)
  })
  after(async () => {
    for (const replication of running) await replication.stop()
    for (const db of open) db.close()
    await store.remove()
    rmSync(dir, { recursive: true, force: true })
  })

  /** A new database of the service's schema, written to by the test as the service would. */
  async function database (name: string): Promise<{ file: string, db: Sqlite.Database, insertUser: (email: string) => void }> {
    const file = join(dir, name, 'app.db')
    const handle = openDatabase(`file:${file}`, { replicated: true })
    await migrateToLatest(handle.db, handle.dialect)
    await handle.db.destroy()
    const db = new Sqlite(file)
    db.pragma('journal_mode = WAL')
    db.pragma('busy_timeout = 5000')
    db.pragma('wal_autocheckpoint = 0')
    open.push(db)
    const insertUser = (email: string): void => {
      db.prepare("insert into users (email, name, password_hash, role, created_at, updated_at) values (?, 'N', 'x', 'USER', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')").run(email)
    }
    return { file, db, insertUser }
  }

  function replicate (file: string, backup: BackupConfig, registry?: Registry): { replication: Replication, lines: Logged[] } {
    const logged = recordingLog()
    const replication = new Replication({ databaseFile: file, backup, binary, log: logged.log, checkMs: 100, ...(registry === undefined ? {} : { registry }) })
    running.push(replication)
    replication.start()
    return { replication, lines: logged.lines }
  }

  const uploaded = (lines: Logged[]): boolean => lines.some((l) => l.msg === 'backup: snapshot written')
  const storeErrors = (lines: Logged[]): Logged[] => lines.filter((l) => l.level === 'error' && /^backup: the replica cannot be written: /.test(l.msg))

  test('the store down at start: one error line while it stays down, lag and errors counted; once it answers, every commit is uploaded and restored', { timeout: 60_000 }, async () => {
    const { file, insertUser } = await database('down-at-start')
    await store.stop()
    const registry = new Registry()
    const { replication, lines } = replicate(file, s3(BUCKET, 'down-at-start'), registry)
    try {
      await waitFor('the store\'s error', () => storeErrors(lines).length > 0)
      for (let i = 0; i < 6; i++) {
        insertUser(`down-${i}@example.com`)
        await sleep(500)
      }
      const errorsCounted = (await registry.getSingleMetric('backup_replication_errors_total')!.get()).values[0]!.value
      assert.ok(errorsCounted >= 2, `Litestream went on trying (${errorsCounted} errors counted)`)
      const shown = storeErrors(lines)
      assert.equal(shown.length, 1, `one line for one outage: ${JSON.stringify(shown)}`)
      assert.match(shown[0]!.msg, /connection refused \(the API goes on; commits wait in the local WAL and are uploaded once it answers\)$/)
      assert.ok(replication.lagSeconds() >= 2.5, `lag ${replication.lagSeconds()} s while the store is down`)
      assert.equal(uploaded(lines), false)
    } finally {
      await store.start()
    }
    await waitFor('the line that the replica is written again', () => lines.some((l) => l.level === 'info' && l.msg === 'backup: the replica is written again'), 30_000)
      .catch((error: Error) => { throw new Error(`${error.message}: ${JSON.stringify(lines.slice(-8))}`) })
    await waitFor('lag 0', () => replication.lagSeconds() === 0)
    const output = join(dir, 'down-at-start.restored.db')
    const restored = await restoreCli(output, { BACKUP_URL: `s3://${BUCKET}/down-at-start`, ...store.env })
    assert.equal(restored.status, 0, restored.stderr)
    assert.match(restored.stdout, /users 6\b/)
  })

  test('a bucket that does not exist: the service logs NoSuchBucket once; the restore exits 1 saying so', { timeout: 60_000 }, async () => {
    const { file, insertUser } = await database('no-bucket')
    const { lines } = replicate(file, s3('no-such-bucket', 'db'))
    insertUser('nobucket@example.com')
    await waitFor('the store\'s error', () => storeErrors(lines).length > 0)
    insertUser('nobucket-2@example.com')
    await sleep(2500)
    assert.equal(storeErrors(lines).length, 1)
    assert.match(storeErrors(lines)[0]!.msg, /^backup: the replica cannot be written: NoSuchBucket: The specified bucket does not exist/)
    const output = join(dir, 'no-bucket.db')
    assertRefused(await restoreCli(output, { BACKUP_URL: 's3://no-such-bucket/db', ...store.env }), /^restore: cannot read the backup at s3:\/\/no-such-bucket\/db: NoSuchBucket: The specified bucket does not exist/, output)
  })

  test('a restore from a path with nothing in it, or from a store that does not answer, exits 1 with one line', { timeout: 60_000 }, async () => {
    const output = join(dir, 'nothing.db')
    assertRefused(await restoreCli(output, { BACKUP_URL: `s3://${BUCKET}/nothing-here`, ...store.env }), /^restore: the backup at s3:\/\/backups\/nothing-here holds nothing \(no generation in the replica\)/, output)
    await store.stop()
    try {
      assertRefused(await restoreCli(output, { BACKUP_URL: `s3://${BUCKET}/down-at-start`, ...store.env }), /^restore: cannot read the backup at s3:\/\/backups\/down-at-start: RequestError: send request failed caused by: dial tcp 127\.0\.0\.1:\d+: connect: connection refused$/m, output)
    } finally {
      await store.start()
    }
  })

  test('wrong credentials: a store that checks signatures refuses them, and both the service and the restore say which; the right ones upload', { timeout: 60_000 }, async () => {
    const signing = await startSigningS3Store()
    try {
      const output = join(dir, 'credentials.db')
      const at = (env: Record<string, string>): Record<string, string> => ({ BACKUP_URL: `s3://${BUCKET}/db`, AWS_ENDPOINT_URL_S3: signing.endpoint, ...env })
      assertRefused(await restoreCli(output, at({ AWS_ACCESS_KEY_ID: 'AKIAWRONGKEY', AWS_SECRET_ACCESS_KEY: 'S3RVER' })),
        /^restore: cannot read the backup at s3:\/\/backups\/db: InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records\.$/m, output)
      assertRefused(await restoreCli(output, at({ AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'wrong-secret' })),
        /^restore: cannot read the backup at s3:\/\/backups\/db: SignatureDoesNotMatch: /, output)
      assertRefused(await restoreCli(output, at({ })), /^restore: cannot read the backup at s3:\/\/backups\/db: /, output)

      const wrong = await database('wrong-credentials')
      Object.assign(process.env, { AWS_ENDPOINT_URL_S3: signing.endpoint, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'wrong-secret' })
      const refused = replicate(wrong.file, s3(BUCKET, 'wrong'))
      Object.assign(process.env, signing.env)
      const accepted = replicate((await database('right-credentials')).file, s3(BUCKET, 'right'))
      Object.assign(process.env, store.env)
      wrong.insertUser('wrong@example.com')
      await waitFor('the store\'s refusal', () => storeErrors(refused.lines).length > 0)
      assert.match(storeErrors(refused.lines)[0]!.msg, /^backup: the replica cannot be written: SignatureDoesNotMatch: /)
      assert.equal(uploaded(refused.lines), false)
      await waitFor('the upload with the right credentials', () => uploaded(accepted.lines))
      assert.deepEqual(storeErrors(accepted.lines), [])
    } finally {
      await signing.remove()
    }
  })

  test('the store\'s reason is one line without the ids that change at every attempt', () => {
    assert.equal(storeReason('NoSuchBucket: The specified bucket does not exist: b\n\tstatus code: 404, request id: 2A7A5A8CBC144C96, host id: x'), 'NoSuchBucket: The specified bucket does not exist: b')
    assert.equal(storeReason('RequestError: send request failed\ncaused by: Get "http://127.0.0.1:9/b?prefix=db%2Fgenerations%2F": dial tcp 127.0.0.1:9: connect: connection refused'),
      'RequestError: send request failed caused by: dial tcp 127.0.0.1:9: connect: connection refused')
    assert.equal(storeReason('client write: RequestError: send request failed\ncaused by: Put "http://127.0.0.1:9/b/db/generations/1/wal/0.wal.lz4": dial tcp 127.0.0.1:9: connect: connection refused'),
      'RequestError: send request failed caused by: dial tcp 127.0.0.1:9: connect: connection refused')
    assert.equal(storeReason(undefined), 'unknown error')
  })
})
