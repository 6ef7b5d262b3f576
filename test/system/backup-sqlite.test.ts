import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { startServer } from '../server/process.js'
import { checkAt, checkLatest, drillLoad, RPO_MS, VICTIMS } from './backup-drill.js'

// The restore drill on SQLite: the service replicates to a folder (BACKUP_URL=file:…) under
// writes from several clients; a time T is marked, posts deleted, the writing goes on; then the
// machine is lost: Litestream and the service SIGKILLed at the same moment (no final upload),
// the data folder deleted. `npm run restore` brings back the latest state, which must hold every
// write acknowledged 2 s before the loss, with its last content; a restore to T brings the
// deleted posts back and holds nothing sent after T.

const ROOT = join(import.meta.dirname, '..', '..')

function restore (backupUrl: string, output: string, at?: string): { seconds: number, stdout: string } {
  const started = Date.now()
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/restore.ts'), '--output', output, ...(at === undefined ? [] : ['--at', at])], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', BACKUP_URL: backupUrl }, encoding: 'utf8'
  })
  assert.equal(result.status, 0, result.stderr + result.stdout)
  return { seconds: (Date.now() - started) / 1000, stdout: result.stdout }
}

test('SQLite: the latest restore holds every write acknowledged 2 s before the machine was lost; a restore to T brings deleted rows back', { timeout: 120_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'api-backup-drill-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'data', 'app.db')
  const backupUrl = `file:${join(dir, 'replica')}`
  const server = startServer({ DATABASE_URL: `file:${file}`, BACKUP_URL: backupUrl, SHUTDOWN_GRACE_MS: '0' })
  const base = await server.listening()
  await server.logged(/snapshot written/)
  const litestream = Number(readFileSync(`${file}-litestream.pid`, 'utf8'))

  let lostAt = 0
  const record = await drillLoad(base, {
    beforeMs: 2500,
    afterMs: 3000,
    loseWhileWriting: async () => {
      // The machine goes: nothing gets to upload a last time.
      lostAt = Date.now()
      process.kill(litestream, 'SIGKILL')
      server.child.kill('SIGKILL')
      await server.exit()
    }
  })
  rmSync(join(dir, 'data'), { recursive: true, force: true })

  const latest = restore(backupUrl, file)
  const restored = startServer({ DATABASE_URL: `file:${file}` })
  const latestFigures = await checkLatest(await restored.listening(), record, lostAt)
  restored.child.kill('SIGTERM')
  assert.equal(await restored.exit(), 0)

  const atFile = join(dir, 'at', 'app.db')
  const atRestore = restore(backupUrl, atFile, new Date(record.at).toISOString())
  const atServer = startServer({ DATABASE_URL: `file:${atFile}` })
  const atFigures = await checkAt(await atServer.listening(), record)
  atServer.child.kill('SIGTERM')
  assert.equal(await atServer.exit(), 0)

  t.diagnostic(`figures ${JSON.stringify({
    database: 'sqlite',
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
