import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { litestreamBinary } from '../../src/backups/litestream.js'
import { Replication } from '../../src/backups/replication.js'
import { sqliteFile } from '../../src/db/database.js'
import { FolderStore } from '../../src/files/folder-store.js'
import { restoreFiles } from '../../src/files/backup-copy.js'
import { buildTestApp, createAdmin, waitFor, type TestApp } from '../helper.js'
import { validProduct } from '../products/fixtures.js'
import { restoreArguments } from '../service-command.js'
import { recordingLog } from '../backups/fixtures.js'
import { pngOf, uploadTo } from './support.js'

// Files in a local folder with BACKUP_URL: every upload's bytes are in the backup's copy before
// it is answered, removals leave the copy alone (a database restored to an earlier time may name
// them), and `npm run restore` brings them back into the STORAGE_URL folder with the database.
// BACKUP_URL replicates the embedded database: the SQLite pass runs it.

const skip = process.env.TEST_DB === 'postgres' ? 'BACKUP_URL backs up the embedded database: the SQLite pass runs it' : false

describe('files in the backup', { skip, timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'api-file-backups-'))
  const replica = join(dir, 'replica')
  let service: TestApp
  let replication: Replication | undefined
  after(async () => {
    await replication?.stop()
    await service?.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const copyOf = (key: string): string => join(replica, 'files', key.slice(0, 2), key.slice(2, 4), key)

  test('an upload is answered once its bytes are in the backup\'s copy; a removal leaves the copy; npm run restore brings the files back with the database', async () => {
    service = await buildTestApp({ BACKUP_URL: `file:${replica}` })
    const { app, config } = service
    // The database replicated as the server replicates it (server.ts), for the restore below.
    const logged = recordingLog()
    replication = new Replication({ databaseFile: sqliteFile(config.databaseUrl), backup: config.backup!, binary: litestreamBinary()!, log: logged.log, checkMs: 100 })
    replication.start()
    await waitFor('the first snapshot', () => logged.lines.some((l) => l.msg === 'backup: snapshot written'), 30_000)
    const admin = await createAdmin(app)
    const product = (await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: validProduct() })).json().id
    const uploads = []
    for (let i = 0; i < 3; i++) {
      const res = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(200, 100, 300 + i))
      assert.equal(res.statusCode, 201, res.body)
      const image = res.json()
      // At the answer, not later.
      for (const key of [image.sha256, `${image.sha256}.thumb`, `${image.sha256}.medium`]) assert.ok(existsSync(copyOf(key)), `the copy of ${key}`)
      uploads.push(image)
    }
    const removed = uploads.pop()
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/products/${product}/images/${removed.id}`, headers: admin.auth })).statusCode, 204)
    await app.blobSweep.run()
    assert.equal(await app.files.store.size(removed.sha256), undefined)
    assert.ok(existsSync(copyOf(removed.sha256)), 'the copy keeps what the storage removed')
    const served = await Promise.all(uploads.map(async (image) => (await app.inject({ method: 'GET', url: `/v1/files/${image.id}` })).rawPayload))

    // Into an empty folder: everything; again: nothing more.
    const elsewhere = new FolderStore(join(dir, 'restored-files'))
    assert.deepEqual(await restoreFiles(new FolderStore(join(replica, 'files')), elsewhere), { copied: 9, present: 0 })
    assert.deepEqual(await restoreFiles(new FolderStore(join(replica, 'files')), elsewhere), { copied: 0, present: 9 })

    // The command, as an operator runs it after losing the machine: the database and the files.
    await waitFor('the last change in the replica', () => replication!.lagSeconds() === 0, 30_000)
    await replication.stop()
    const files = join(dir, 'files-after-loss')
    const cli = spawnSync(process.execPath, restoreArguments(['--output', join(dir, 'restored.db')]), {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', BACKUP_URL: `file:${replica}`, STORAGE_URL: `file:${files}` }
    })
    assert.equal(cli.status, 0, cli.stderr)
    assert.match(cli.stdout, new RegExp(`\\nfiles: 9 copied into file:${files}, 0 there already\\n`))
    for (const [i, image] of uploads.entries()) {
      assert.ok(readFileSync(join(files, image.sha256.slice(0, 2), image.sha256.slice(2, 4), image.sha256)).equals(served[i]!), `image ${image.id} restored`)
    }
  })
})
