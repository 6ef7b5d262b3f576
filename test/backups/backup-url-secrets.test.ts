import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { BackupConfigError, describeTarget, parseBackupTarget, redactedBackupUrl } from '../../src/backups/backup.config.js'
import { Replication, type ReplicationLog } from '../../src/backups/replication.js'
import { ConfigError, loadConfig } from '../../src/config/config.js'
import { startServer } from '../server/process.js'
import { restoreArguments } from '../service-command.js'

// A secret pasted into BACKUP_URL (S3 credentials before an `@`, a query, a fragment) is never
// printed: not by the configuration's refusal, the start-up's, `npm run restore`'s, nor the
// replication's log. S3 credentials come from the AWS variables only, so such a URL is refused.

// An AWS secret access key may hold `/` and `+`.
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYS3CR3T'
const KEY_ID = 'AKIAIOSFODNN7EXAMPLE'

const refusedWithSecrets: Array<[string, RegExp]> = [
  [`s3://${KEY_ID}:${SECRET}@my-bucket/api-db`, /holds credentials .*AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/],
  ['s3://AKIAXXX:secretkey@bucket/path', /holds credentials/],
  [`s3://${SECRET}@my-bucket/api-db`, /holds credentials/],
  [`s3://my-bucket/api-db?secret=${encodeURIComponent(SECRET)}`, /an s3:\/\/ URL takes no query options \(values not shown\)/],
  [`s3://my-bucket/api-db?secret=${SECRET}&region=eu-west-1`, /takes no query options/],
  [`s3://my-bucket/api-db?${SECRET}`, /takes no query options/],
  [`s3://my-bucket/api-db#${SECRET}`, /takes no fragment/],
  [`s3://my-bucket/api-db?x=1#${SECRET}`, /takes no fragment/],
  // Malformed: refused as not a BACKUP_URL at all, and quoted redacted.
  [`https://${KEY_ID}:${SECRET}@my-bucket.s3.amazonaws.com/api-db`, /must be file:DIR or s3:\/\/BUCKET\/PATH, got "https:\/\/\*\*\*@my-bucket/],
  [`S3://${KEY_ID}:${SECRET}@my-bucket/api-db`, /must be file:DIR or s3:\/\/BUCKET\/PATH/],
  [` s3://${KEY_ID}:${SECRET}@my-bucket/api-db`, /must be file:DIR or s3:\/\/BUCKET\/PATH, got "\*\*\*@my-bucket\/api-db"/],
  [`${KEY_ID}:${SECRET}@my-bucket/api-db`, /must be file:DIR or s3:\/\/BUCKET\/PATH, got "\*\*\*@my-bucket\/api-db"/],
  [`s3:/${KEY_ID}:${SECRET}@my-bucket/api-db`, /must be file:DIR or s3:\/\/BUCKET\/PATH, got "s3:\*\*\*@my-bucket\/api-db"/],
  [`ftp://backups.example.com/api?token=${SECRET}`, /got "ftp:\/\/backups\.example\.com\/api\?token=\*\*\*"/],
  [`file://${KEY_ID}:${SECRET}@backups.example.com/api`, /"file:\/\/\*\*\*@backups\.example\.com\/api" names a host/]
]

const leaks = (text: string): boolean => [SECRET, KEY_ID, 'secretkey', 'S3CR3T', 'AKIAXXX'].some((s) => text.includes(s))

describe('BACKUP_URL: secrets in it are refused and never printed', () => {
  for (const [raw, reason] of refusedWithSecrets) {
    test(`refused without quoting its secret: ${JSON.stringify(raw.replace(SECRET, 'SECRET').replace(encodeURIComponent(SECRET), 'SECRET'))}`, () => {
      assert.throws(() => parseBackupTarget(raw), (error: unknown) => {
        assert.ok(error instanceof BackupConfigError)
        assert.match(error.message, /^BACKUP_URL: /)
        assert.match(error.message, reason)
        assert.ok(!leaks(error.message), error.message)
        return true
      })
      assert.throws(() => loadConfig({ BACKUP_URL: raw }), (error: unknown) => {
        assert.ok(error instanceof ConfigError)
        assert.equal(error.variable, 'BACKUP_URL')
        assert.ok(!leaks(error.message), error.message)
        return true
      })
    })
  }

  test('redactedBackupUrl masks user info, query values and a fragment, and keeps the rest', () => {
    assert.equal(redactedBackupUrl('s3://my-bucket/api-db'), 's3://my-bucket/api-db')
    assert.equal(redactedBackupUrl('file:/var/backups/api'), 'file:/var/backups/api')
    assert.equal(redactedBackupUrl(`s3://${KEY_ID}:${SECRET}@my-bucket/api-db`), 's3://***@my-bucket/api-db')
    assert.equal(redactedBackupUrl(`s3://my-bucket/api-db?secret=${SECRET}&endpoint=http://minio:9000&${SECRET}=x`), 's3://my-bucket/api-db?secret=***&endpoint=***&***')
    assert.equal(redactedBackupUrl(`s3://my-bucket/api-db#${SECRET}`), 's3://my-bucket/api-db#***')
    assert.equal(redactedBackupUrl(`${SECRET}@host`), '***@host')
  })

  test('the forms without secrets are still read', () => {
    assert.deepEqual(parseBackupTarget('s3://my-bucket/api/db/'), { kind: 's3', bucket: 'my-bucket', path: 'api/db' })
    assert.deepEqual(parseBackupTarget('file:/var/backups/me@host'), { kind: 'file', dir: '/var/backups/me@host' })
  })

  test('a target is described without its secrets (the replication log and messages use it)', () => {
    assert.equal(describeTarget({ kind: 's3', bucket: 'my-bucket', path: 'api-db' }), 's3://my-bucket/api-db')
    assert.equal(describeTarget({ kind: 'file', dir: '/var/backups/api' }), '/var/backups/api')
    assert.ok(!leaks(describeTarget({ kind: 's3', bucket: 'my-bucket', path: `api-db?secret=${SECRET}` })))
  })

  test("the replication's start-up log line names the target without its secrets", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'api-backup-secrets-'))
    const lines: Array<{ obj: object, msg: string }> = []
    const record = (obj: object, msg: string): void => { lines.push({ obj, msg }) }
    const log: ReplicationLog = { debug: record, info: record, warn: record, error: record }
    // A target as a caller might build it, not through parseBackupTarget (which refuses this one);
    // `true` stands for Litestream: only the line logged as it starts matters.
    const replication = new Replication({
      databaseFile: join(dir, 'app.db'),
      backup: { target: { kind: 's3', bucket: 'my-bucket', path: `api-db?secret=${SECRET}` }, snapshotIntervalSeconds: 3600, retentionSeconds: 86400 },
      binary: 'true',
      log
    })
    try {
      replication.start()
      const started = lines.find((l) => l.msg === 'backup: replicating the database (Litestream)')
      assert.ok(started !== undefined)
      assert.equal((started.obj as { target: string }).target, 's3://my-bucket/api-db?secret=***')
      assert.ok(!lines.some((l) => leaks(JSON.stringify(l))))
    } finally {
      await replication.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('npm run restore and npm start refuse such a BACKUP_URL with one line that does not quote the secret', async () => {
    const raw = `s3://${KEY_ID}:${SECRET}@my-bucket/api-db`
    const cli = spawnSync(process.execPath, restoreArguments(['--output', join(tmpdir(), 'never-written.db')]),
      { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', BACKUP_URL: raw } })
    assert.equal(cli.status, 1)
    assert.match(cli.stderr, /^restore: BACKUP_URL: "s3:\/\/\*\*\*@my-bucket\/api-db" holds credentials/)
    assert.ok(!leaks(cli.stderr + cli.stdout), cli.stderr)

    const server = startServer({ BACKUP_URL: `s3://my-bucket/api-db?secret=${SECRET}` })
    assert.notEqual(await server.exit(), 0)
    assert.match(server.stderr(), /^Invalid configuration: BACKUP_URL: "s3:\/\/my-bucket\/api-db\?secret=\*\*\*": an s3:\/\/ URL takes no query options/)
    assert.ok(!leaks(server.stderr() + server.stdout()), server.stderr())
  })
})
