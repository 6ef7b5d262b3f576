import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test, type TestContext } from 'node:test'
import { freePort } from '../../scripts/free-port.mjs'
import { startS3Store, type S3Store } from '../support/s3-store.js'
import { startServer, type ServerProcess } from '../server/process.js'
import { body, signUpAndLogIn } from './api-client.js'
import { checkAt, checkImages, checkLatest, drillLoad, readPost, reportAndCheck } from './backup-drill.js'
import { json } from './load.js'
import { restoreArguments } from '../service-command.js'

// The restore drill on SQLite, to a folder (BACKUP_URL=file:…) and to an S3 bucket (s3://… on an
// S3 API server on loopback): the service replicates under writes from several clients; a time
// T is marked, posts deleted, the writing goes on; then the machine is lost: Litestream and the
// service SIGKILLed at the same moment (no final upload), the data folder deleted. `npm run
// restore` brings back the latest state, which must hold every write acknowledged 2 s before the
// loss, with its last content, and serves every image acknowledged by then (uploaded among the
// writes into the data folder, brought back from the backup's copy); a restore to T brings the
// deleted posts back and holds nothing sent after T. Before the drill, the bucket's store goes away for 12 s under writes: the API
// answers every write, the lag metric and the warning say so, and once the store is back the
// replica catches up (the writes of the outage are in the latest restore).

/** `npm run restore`, asynchronously (the S3 store answers from this process). */
async function restore (backupUrl: string, env: Record<string, string>, output: string, at?: string): Promise<{ seconds: number, stdout: string }> {
  const started = Date.now()
  const args = restoreArguments(['--output', output, ...(at === undefined ? [] : ['--at', at])])
  const child = execFile(process.execPath, args, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', BACKUP_URL: backupUrl, ...env }, encoding: 'utf8' })
  let out = ''
  child.stdout!.on('data', (chunk: string) => { out += chunk })
  child.stderr!.on('data', (chunk: string) => { out += chunk })
  const [code] = await once(child, 'exit') as [number | null]
  assert.equal(code, 0, out)
  return { seconds: (Date.now() - started) / 1000, stdout: out }
}

/** The value of a metric without labels on the service's metrics listener. */
async function metric (metricsPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  assert.ok(line !== undefined, `${name} is exported`)
  return Number(line.split(' ')[1])
}

/**
 * The store goes away for 12 s while a client writes: every write is answered 201; past 10 s the
 * lag metric is over 10 and the warning is logged, with one error line for the whole outage (two
 * when the store went away in the middle of an upload: reset, then refused);
 * once the store is back the replica is written again and catches up. Returns the posts written.
 */
async function storeOutage (t: TestContext, base: string, server: ServerProcess, store: S3Store, metricsPort: number): Promise<number[]> {
  const { auth } = await signUpAndLogIn(base, `outage.${Date.now()}@example.com`)
  const written: number[] = []
  const write = async (): Promise<void> => {
    const created = await body(await fetch(`${base}/v1/posts`, json({ title: `outage ${written.length}`, content: 'written while the store was away' }, auth)), 201) as { id: number }
    written.push(created.id)
  }
  await store.stop()
  const wentAway = Date.now()
  while (Date.now() - wentAway < 12_000) {
    await write()
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const lag = await metric(metricsPort, 'backup_replication_lag_seconds')
  assert.ok(lag > 10, `the lag metric says the replica is behind (${lag} s)`)
  await server.logged(/the replica has been missing commits for over 10 s/)
  // One error line per reason the store gives (docs/RELIABILITY.md): its going away refuses
  // connections, and may first cut short an upload it was answering (a reset).
  const errorLines = server.stdout().split('\n').filter((line) => /backup: the replica cannot be written: /.test(line))
  const reasons = errorLines.map((line) => (JSON.parse(line) as { msg: string }).msg)
  assert.ok(reasons.length === 1 || (reasons.length === 2 && /connection reset by peer/.test(reasons[0]!)), `one error line for the outage, two if an upload was cut short: ${errorLines.join('\n')}`)
  assert.match(reasons.at(-1)!, /connection refused/)
  assert.ok(await metric(metricsPort, 'backup_replication_errors_total') > 1, 'every failed attempt is counted')
  await store.start()
  const back = Date.now()
  while (!/the replica has caught up/.test(server.stdout())) {
    assert.ok(Date.now() - back < 30_000, 'the replica catches up within 30 s of the store coming back')
    await write()
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.match(server.stdout(), /backup: the replica is written again/)
  t.diagnostic(`store outage: ${written.length} writes answered 201, lag ${lag.toFixed(1)} s after 12 s, caught up ${((Date.now() - back) / 1000).toFixed(1)} s after the store came back`)
  return written
}

async function drill (t: TestContext, target: 'file' | 's3'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'api-backup-drill-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })
  const store = target === 's3' ? await startS3Store() : undefined
  if (store !== undefined) after(async () => { await store.remove() })
  const storeEnv = store?.env ?? {}
  const file = join(dir, 'data', 'app.db')
  const backupUrl = target === 's3' ? 's3://backups/drill/app-db' : `file:${join(dir, 'replica')}`
  const metricsPort = await freePort()
  // The images in the data folder too: lost with the machine, restored from the backup's copy.
  const files = `file:${join(dir, 'data', 'files')}`
  const server = startServer({ DATABASE_URL: `file:${file}`, BACKUP_URL: backupUrl, STORAGE_URL: files, SHUTDOWN_GRACE_MS: '0', METRICS_PORT: String(metricsPort), ...storeEnv })
  after(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL')})
  const base = await server.listening()
  await server.logged(/snapshot written/)
  const litestream = (): number => Number(readFileSync(`${file}-litestream.pid`, 'utf8'))
  const outagePosts = store === undefined ? [] : await storeOutage(t, base, server, store, metricsPort)

  let lostAt = 0
  const record = await drillLoad(base, {
    beforeMs: 2500,
    afterMs: 3000,
    images: true,
    loseWhileWriting: async () => {
      // The machine goes: nothing gets to upload a last time.
      lostAt = Date.now()
      process.kill(litestream(), 'SIGKILL')
      server.child.kill('SIGKILL')
      await server.exit()
    }
  })
  rmSync(join(dir, 'data'), { recursive: true, force: true })

  const latest = await restore(backupUrl, { ...storeEnv, STORAGE_URL: files }, file)
  assert.match(latest.stdout, /\nfiles: [1-9]\d* copied into /)
  const restored = startServer({ DATABASE_URL: `file:${file}`, STORAGE_URL: files })
  const restoredBase = await restored.listening()
  const latestFigures = await checkLatest(restoredBase, record, lostAt)
  const imageFigures = await checkImages(restoredBase, record, lostAt)
  let outageMissing = 0
  for (const id of outagePosts) if (await readPost(restoredBase, id) === undefined) outageMissing++
  restored.child.kill('SIGTERM')
  assert.equal(await restored.exit(), 0)

  const atFile = join(dir, 'at', 'app.db')
  const atFiles = `file:${join(dir, 'at', 'files')}`
  const atRestore = await restore(backupUrl, { ...storeEnv, STORAGE_URL: atFiles }, atFile, new Date(record.at).toISOString())
  const atServer = startServer({ DATABASE_URL: `file:${atFile}`, STORAGE_URL: atFiles })
  const atFigures = await checkAt(await atServer.listening(), record)
  atServer.child.kill('SIGTERM')
  assert.equal(await atServer.exit(), 0)

  if (store !== undefined) t.diagnostic(`store outage: ${outagePosts.length} writes, ${outageMissing} of them missing from the latest restore`)
  assert.equal(outageMissing, 0, 'every write of the store\'s outage is in the latest restore')
  reportAndCheck(t, { labels: { database: 'sqlite', backup: target }, record, latest: latestFigures, at: atFigures, restoreSeconds: latest.seconds, restoreToTSeconds: atRestore.seconds, images: imageFigures })
}

test('SQLite, backups in a folder: the latest restore holds every write acknowledged 2 s before the machine was lost; a restore to T brings deleted rows back', { timeout: 120_000 }, async (t) => {
  await drill(t, 'file')
})

test('SQLite, backups in an S3 bucket: the store away for 12 s under writes is caught up; then the same drill restores from the bucket', { timeout: 180_000 }, async (t) => {
  await drill(t, 's3')
})
