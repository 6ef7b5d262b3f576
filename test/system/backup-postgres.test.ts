import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { barmanMissing, restorePostgres, type RestoredPostgres } from '../../scripts/barman.mjs'
import { freePort } from '../../scripts/free-port.mjs'
import { haMissing, postgresBin, startHaPostgres } from '../../scripts/ha-postgres.mjs'
import { startServer } from '../server/process.js'
import { checkAt, checkLatest, drillLoad, RPO_MS, VICTIMS } from './backup-drill.js'

// The restore drill on PostgreSQL: the HA recipe (two nodes under Patroni, HAProxy) with Barman
// streaming its WAL into a folder of its own; a service instance takes writes from several
// clients; a time T is marked, posts deleted, the writing goes on; then everything is lost at
// once: the service and both nodes (Patroni and PostgreSQL) SIGKILLed, the nodes' data deleted.
// A new PostgreSQL restored from the backups, at the latest point, must hold every write
// acknowledged 2 s before the loss, with its last content; one restored to T holds the deleted
// posts and nothing sent after T.

const missing = haMissing() ?? barmanMissing()
const skip = missing !== undefined && process.env.CI === undefined ? missing : false

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
  const credentials = new URL(ha.url)
  const serve = async (r: RestoredPostgres): Promise<{ base: string, stop: () => Promise<void> }> => {
    const url = new URL(credentials)
    url.port = String(r.port)
    const service = startServer({ DATABASE_URL: url.toString() })
    return { base: await service.listening(), stop: async () => { service.child.kill('SIGTERM'); assert.equal(await service.exit(), 0) } }
  }

  const latest = await restorePostgres({ dir: backups, output: join(restores, 'latest'), port: await freePort(), at: undefined, bin })
  restored.push(latest)
  const latestService = await serve(latest)
  const latestFigures = await checkLatest(latestService.base, record, lostAt)
  await latestService.stop()
  latest.stop()

  const atRestore = await restorePostgres({ dir: backups, output: join(restores, 'at'), port: await freePort(), at: new Date(record.at), bin })
  restored.push(atRestore)
  const atService = await serve(atRestore)
  const atFigures = await checkAt(atService.base, record)
  await atService.stop()

  t.diagnostic(`figures ${JSON.stringify({
    database: 'postgres',
    acknowledged: record.acknowledged,
    acknowledgedTwoSecondsBeforeLoss: latestFigures.acknowledgedBeforeRpo,
    lostTwoSecondsBeforeLoss: latestFigures.missing,
    lostInAll: latestFigures.lost,
    rpoSeconds: latestFigures.rpoMs === undefined ? 'nothing acknowledged is missing' : latestFigures.rpoMs / 1000,
    restoreSeconds: latest.seconds,
    pitrRowsBack: atFigures.victimsBack,
    sentAfterT: atFigures.startedAfter,
    sentAfterTPresent: atFigures.presentAfter,
    restoreToTSeconds: atRestore.seconds
  })}`)
  for (const example of latestFigures.examples) t.diagnostic(`missing: ${example}`)
  assert.equal(latestFigures.missing, 0, `every write acknowledged ${RPO_MS} ms before the loss is restored`)
  assert.equal(latestFigures.deletedStillThere, 0, 'posts deleted before that are gone')
  assert.equal(atFigures.victimsBack, VICTIMS, 'the restore to T brings back every post deleted after T')
  assert.ok(atFigures.startedAfter > 0, 'writes were sent after T')
  assert.equal(atFigures.presentAfter, 0, 'nothing sent after T is in the restore to T')
  assert.equal(atFigures.missing, 0, `every write acknowledged ${RPO_MS} ms before T is in the restore to T`)
})
