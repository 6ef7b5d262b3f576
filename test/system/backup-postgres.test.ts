import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { barmanMissing, restorePostgres, type RestoredPostgres } from '../../scripts/barman.mjs'
import { cloudMissing, restoreFromCloud } from '../../scripts/barman-cloud.mjs'
import { freePort } from '../../scripts/free-port.mjs'
import { haMissing, postgresBin, startHaPostgres } from '../../scripts/ha-postgres.mjs'
import { startS3Store, startSigningS3Store } from '../support/s3-store.js'
import { startServer } from '../server/process.js'
import { body, signUpAndLogIn } from './api-client.js'
import { type AtFigures, checkAt, checkImages, checkLatest, type DrillRecord, drillLoad, type ImageFigures, type LatestFigures, readPost, reportAndCheck, RPO_MS } from './backup-drill.js'
import { json, waitFor } from './load.js'
import pg from 'pg'
import { restoreArguments } from '../service-command.js'

// The restore drill on PostgreSQL: the HA recipe (two nodes under Patroni, HAProxy) with Barman
// streaming its WAL into a folder of its own; a service instance takes writes from several
// clients; a time T is marked, posts deleted, the writing goes on; then everything is lost at
// once: the service and both nodes (Patroni and PostgreSQL) SIGKILLed, the nodes' data deleted.
// A new PostgreSQL restored from the backups, at the latest point, must hold every write
// acknowledged 2 s before the loss, with its last content; one restored to T holds the deleted
// posts and nothing sent after T.
//
// The same drill with the backups in object storage (an S3 API server on loopback): every node's
// archive_command uploads the WAL (within ARCHIVE_TIMEOUT_S of a commit), base backups go there
// too; the primary is failed over before the drill, so the restore must follow the new primary's
// timeline in the bucket. The service keeps its images in the same store (STORAGE_URL=s3://…)
// and one more client uploads images among the writes: every image acknowledged within the
// bound before the loss is served whole by the service on the restored database, and none it
// names is without its bytes.

/**
 * Waits (60 s at most) until the primary behind `url` has archived the WAL segment written now.
 * Resolves with the moment before the current WAL position was read (every commit acknowledged
 * before it is in the archive once this resolves) and the archiver's failures so far.
 */
async function walArchivedUpToNow (url: string): Promise<{ coveredUntil: number, failedCount: number, lastFailedWal: string | null }> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const coveredUntil = Date.now()
    const now = (await client.query<{ wal: string }>('select pg_walfile_name(pg_current_wal_lsn()) as wal')).rows[0]!.wal
    // Segment names sort in order within a timeline (its 8 hex digits lead); a .history file is not a segment.
    await waitFor(`the WAL segment ${now} archived`, async () => {
      const archived = (await client.query<{ wal: string | null }>('select last_archived_wal as wal from pg_stat_archiver')).rows[0]!.wal
      return archived !== null && /^[0-9A-F]{24}$/.test(archived) && archived >= now
    }, 60_000)
    const archiver = (await client.query<{ failed_count: string, last_failed_wal: string | null }>('select failed_count, last_failed_wal from pg_stat_archiver')).rows[0]!
    return { coveredUntil, failedCount: Number(archiver.failed_count), lastFailedWal: archiver.last_failed_wal }
  } finally {
    await client.end()
  }
}

const missing = haMissing() ?? barmanMissing()
const skip = missing !== undefined && process.env.CI === undefined ? missing : false

/**
 * After the loss: the latest state and the state at T, each restored by `restoreTo` into a new
 * PostgreSQL, served by a new service instance (the cluster's credentials) and read; `readLatest`
 * reads more of the latest one. Returns the figures to report and check.
 */
async function restoreAndRead (options: {
  clusterUrl: string
  record: DrillRecord
  lostAt: number
  rpoMs: number
  restored: RestoredPostgres[]
  restoreTo: (name: string, at: Date | undefined, port: number) => Promise<RestoredPostgres>
  readLatest?: (base: string) => Promise<void>
  /** More of a restored service's environment (its STORAGE_URL and the store's credentials). */
  serverEnv?: Record<string, string>
  say?: (line: string) => void
}): Promise<{ latest: LatestFigures, at: AtFigures, restoreSeconds: number, restoreToTSeconds: number }> {
  const say = options.say ?? (() => {})
  const serve = async (r: RestoredPostgres): Promise<{ base: string, stop: () => Promise<void> }> => {
    const url = new URL(options.clusterUrl)
    url.port = String(r.port)
    const service = startServer({ DATABASE_URL: url.toString(), ...options.serverEnv })
    return { base: await service.listening(), stop: async () => { service.child.kill('SIGTERM'); assert.equal(await service.exit(), 0) } }
  }
  say('restoring the latest state')
  const latest = await options.restoreTo('latest', undefined, await freePort())
  options.restored.push(latest)
  say(`restored in ${latest.seconds.toFixed(1)} s; serving and reading it`)
  const latestService = await serve(latest)
  const latestFigures = await checkLatest(latestService.base, options.record, options.lostAt, options.rpoMs)
  say('read the latest posts')
  await options.readLatest?.(latestService.base)
  await latestService.stop()
  latest.stop()

  say('restoring to T')
  const atRestore = await options.restoreTo('at', new Date(options.record.at), await freePort())
  options.restored.push(atRestore)
  say(`restored to T in ${atRestore.seconds.toFixed(1)} s; serving and reading it`)
  const atService = await serve(atRestore)
  const atFigures = await checkAt(atService.base, options.record)
  await atService.stop()
  say('read the state at T')
  return { latest: latestFigures, at: atFigures, restoreSeconds: latest.seconds, restoreToTSeconds: atRestore.seconds }
}

test('PostgreSQL (Patroni, Barman): the latest restore holds every write acknowledged 2 s before every node was lost; a restore to T brings deleted rows back', { skip, timeout: 240_000 }, async (t) => {
  if (missing !== undefined) throw new Error(missing)
  const backups = mkdtempSync(join(tmpdir(), 'api-pg-backups-'))
  const restores = mkdtempSync(join(tmpdir(), 'api-pg-restored-'))
  const restored: RestoredPostgres[] = []
  after(() => {
    for (const r of restored) r.stop()
    rmSync(backups, { recursive: true, force: true })
    rmSync(restores, { recursive: true, force: true })
  })
  const ha = await startHaPostgres({ nodes: 2, backups: { dir: backups } })
  after(async () => { await ha.stop({ remove: true }) })
  const server = startServer({ DATABASE_URL: ha.url, SHUTDOWN_GRACE_MS: '0' })
  const base = await server.listening()

  let lostAt = 0
  const record = await drillLoad(base, {
    beforeMs: 2500,
    afterMs: 3000,
    loseWhileWriting: async () => {
      // Every node and the service at once; Barman's host survives.
      lostAt = Date.now()
      server.child.kill('SIGKILL')
      await Promise.all([...ha.nodes.map(async (node) => { await ha.killNode(node) }), server.exit()])
    }
  })
  await ha.stop({ remove: true })

  const bin = postgresBin()!
  const figures = await restoreAndRead({
    clusterUrl: ha.url, record, lostAt, rpoMs: RPO_MS, restored,
    restoreTo: async (name, at, port) => await restorePostgres({ dir: backups, output: join(restores, name), port, at, bin })
  })
  reportAndCheck(t, { labels: { database: 'postgres', backup: 'barman folder' }, record, ...figures })
})

const cloudMissingHere = haMissing() ?? cloudMissing()
const cloudSkip = cloudMissingHere !== undefined && process.env.CI === undefined ? cloudMissingHere : false
/** archive_timeout of the object-storage drill: a commit is uploaded within it and one upload. */
const ARCHIVE_TIMEOUT_S = 2
/** What the drill holds the object-storage recipe to: the archive timeout and 3 s for the upload. */
const CLOUD_RPO_MS = ARCHIVE_TIMEOUT_S * 1000 + 3000

test('PostgreSQL (Patroni, backups and images in an S3 bucket): after a failover, the latest restore from the bucket holds every write and image acknowledged 5 s (or the archiving lag, if longer) before every node was lost; a restore to T brings deleted rows back', { skip: cloudSkip, timeout: 300_000 }, async (t) => {
  if (cloudMissingHere !== undefined) throw new Error(cloudMissingHere)
  const store = await startS3Store()
  after(async () => { await store.remove() })
  // PostgreSQL's archive_command and the barman-cloud commands read the store from the environment.
  Object.assign(process.env, store.env)
  const url = 's3://backups/pg-cluster'
  const restores = mkdtempSync(join(tmpdir(), 'api-pg-restored-'))
  const restored: RestoredPostgres[] = []
  after(() => {
    for (const r of restored) r.stop()
    rmSync(restores, { recursive: true, force: true })
  })
  // Each stage on stderr with its time, so that a run that overstays its limit says where.
  const began = Date.now()
  const say = (line: string): void => { process.stderr.write(`# s3 drill +${((Date.now() - began) / 1000).toFixed(1)} s: ${line}\n`) }
  const ha = await startHaPostgres({ nodes: 2, say, cloudBackups: { url, archiveTimeoutSeconds: ARCHIVE_TIMEOUT_S } })
  after(async () => { await ha.stop({ remove: true }) })
  // The images in the same store, as a cluster keeps them (a folder would be one machine's).
  const files = { STORAGE_URL: 's3://backups/pg-files', ...store.env }
  const server = startServer({ DATABASE_URL: ha.url, SHUTDOWN_GRACE_MS: '0', ...files })
  after(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  const base = await server.listening()

  // Posts before and after a failover: the new primary archives its own timeline.
  const { auth } = await signUpAndLogIn(base, `failover.${Date.now()}@example.com`)
  const write = async (title: string): Promise<number> => (await body(await fetch(`${base}/v1/posts`, json({ title, content: 'around the failover' }, auth)), 201) as { id: number }).id
  const aroundFailover: number[] = []
  for (let i = 0; i < 20; i++) aroundFailover.push(await write(`before ${i}`))
  say('20 posts written; failing the primary over')
  const first = (await ha.primary())!
  await ha.killNode(first)
  const failedOver = Date.now()
  for (;;) {
    const now = await ha.primary()
    if (now !== undefined && now !== first) break
    assert.ok(Date.now() - failedOver < 60_000, 'a standby is promoted within 60 s')
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  for (let i = 0; i < 20;) {
    const res = await fetch(`${base}/v1/posts`, json({ title: `after ${i}`, content: 'around the failover' }, auth))
    if (res.status === 201) {
      aroundFailover.push((await res.json() as { id: number }).id)
      i++
    } else {
      await res.arrayBuffer()
      assert.ok(Date.now() - failedOver < 90_000, `the service writes to the new primary within 90 s (last answer ${res.status})`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }

  say('failed over, 20 posts more written; the drill\'s writes and uploads begin')
  let lostAt = 0
  let archive = { coveredUntil: 0, failedCount: 0, lastFailedWal: null as string | null }
  const record = await drillLoad(base, {
    beforeMs: 2500,
    afterMs: 6000,
    images: true,
    // A restore to T needs a commit past T in the bucket (the deletions are): the loss waits until
    // the primary has archived the WAL segment holding them. Archiving takes ARCHIVE_TIMEOUT_S and
    // an upload (a barman-cloud-wal-archive process), which a busy machine can stretch past the
    // 6 s above; the RPO is checked on its own, against the acknowledged writes.
    beforeLoss: async () => {
      say('waiting for the WAL of now to be archived')
      archive = await walArchivedUpToNow(ha.url)
    },
    loseWhileWriting: async () => {
      say('losing every node and the service')
      lostAt = Date.now()
      server.child.kill('SIGKILL')
      await Promise.all([...ha.nodes.map(async (node) => { await ha.killNode(node) }), server.exit()])
    }
  })
  say(`lost; ${record.images.length} images acknowledged`)
  await ha.stop({ remove: true })

  // The recipe's bound is archive_timeout and one upload, and an upload is a process whose time is
  // the machine's: where archiving lagged behind (the wait above ran longer than the upload's
  // 3 s), the bound is what the archive had confirmed when the loss came, and the lag is reported.
  const archiveLagMs = lostAt - archive.coveredUntil
  const rpoMs = Math.max(CLOUD_RPO_MS, archiveLagMs)
  const bin = postgresBin()!
  let failoverMissing = 0
  let images: ImageFigures | undefined
  const figures = await restoreAndRead({
    clusterUrl: ha.url, record, lostAt, rpoMs, restored, serverEnv: files, say,
    restoreTo: async (name, at, port) => await restoreFromCloud({ url, output: join(restores, name), port, at, bin }),
    readLatest: async (restoredBase) => {
      for (const id of aroundFailover) if (await readPost(restoredBase, id) === undefined) failoverMissing++
      images = await checkImages(restoredBase, record, lostAt, rpoMs)
    }
  })
  t.diagnostic(`around the failover: ${aroundFailover.length} posts, ${failoverMissing} of them missing from the latest restore`)
  assert.equal(failoverMissing, 0, 'every post written before and after the failover is in the latest restore')
  reportAndCheck(t, { labels: { database: 'postgres', backup: 's3', archiveLagSeconds: archiveLagMs / 1000, archiveFailures: archive.failedCount, lastFailedWal: archive.lastFailedWal }, record, rpoMs, images, ...figures })
})

test('npm run restore -- --postgres s3://…: a path with no backup, a bucket that does not exist, a store that does not answer, wrong credentials: exit 1 with one line', { skip: cloudSkip, timeout: 120_000 }, async () => {
  if (cloudMissingHere !== undefined) throw new Error(cloudMissingHere)
  const store = await startS3Store()
  const signing = await startSigningS3Store()
  const work = mkdtempSync(join(tmpdir(), 'api-pg-restore-refused-'))
  after(async () => {
    await store.remove()
    await signing.remove()
    rmSync(work, { recursive: true, force: true })
  })
  const port = String(await freePort())
  const refused = async (url: string, env: Record<string, string>, line: RegExp): Promise<void> => {
    const output = join(work, 'data')
    const result = await new Promise<{ code: number | null, stdout: string, stderr: string }>((resolve) => {
      const child = execFile(process.execPath, restoreArguments(['--postgres', url, '--output', output, '--port', port]), {
        encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, timeout: 60_000
      }, (_error, stdout, stderr) => { resolve({ code: child.exitCode, stdout, stderr }) })
    })
    assert.equal(result.code, 1, result.stdout + result.stderr)
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr)
    assert.match(result.stderr, line)
    assert.equal(existsSync(output), false, 'nothing is written')
  }
  await refused('s3://backups/nothing-here', store.env, /^restore: s3:\/\/backups\/nothing-here holds no finished base backup/)
  await refused('s3://no-such-bucket/pg', store.env, /^restore: barman-cloud-backup-list failed: .*(NoSuchBucket|does not exist)/)
  await refused('s3://backups/pg', signing.env, /^restore: s3:\/\/backups\/pg holds no finished base backup/)
  await refused('s3://backups/pg', { ...signing.env, AWS_SECRET_ACCESS_KEY: 'wrong-secret' }, /^restore: barman-cloud-backup-list failed: Barman cloud backup list exception: An error occurred \(403\) when calling the HeadBucket operation: Forbidden$/m)
  await store.stop()
  await refused('s3://backups/pg', store.env, /^restore: barman-cloud-backup-list failed: .*(Could not connect|Connection refused|connect)/i)
  await refused('https://backups/pg', store.env, /^restore: /)
})
