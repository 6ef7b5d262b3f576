import fp from 'fastify-plugin'
import type { BlobStore } from './blob-store.js'
import { openBackupCopy } from './backup-copy.js'
import { BlobSweep } from './blob-sweep.js'
import { FileService } from './file.service.js'
import { FolderStore } from './folder-store.js'
import { S3Store } from './s3-store.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Uploads and removals of files, and their storage (STORAGE_URL). */
    files: FileService
    /** The sweep of stored bytes no file refers to (run by itself every few minutes). */
    blobSweep: BlobSweep
  }
}

const SWEEP_INTERVAL_MS = 10 * 60_000
const ORPHAN_AGE_MS = 60 * 60_000

// The storage of files, opened with the app and closed after it: a folder (the embedded default,
// `file:data/files`) or an S3 bucket. Every instance sweeps in turn (one at a time).
export const files = fp(async (app) => {
  const { storage, maxBytes, aws, storeTimeoutMs } = app.config.files
  const store: BlobStore = storage.kind === 'folder'
    ? new FolderStore(storage.dir)
    : await S3Store.open({ bucket: storage.bucket, prefix: storage.prefix }, aws, storeTimeoutMs)
  // Files in a local folder are copied to the backup target with the database (in S3, the bucket
  // is their copy).
  const backup = app.config.backup !== undefined && storage.kind === 'folder' ? await openBackupCopy(app.config.backup.target, aws, storeTimeoutMs) : undefined
  const service = new FileService({ db: app.db, dialect: app.dialect, store, backup, maxBytes, log: app.log.child({ component: 'files' }), registry: app.metricsRegistry })
  const sweep = new BlobSweep({ db: app.db, store, files: service, log: app.log.child({ component: 'files' }), intervalMs: SWEEP_INTERVAL_MS, orphanAgeMs: ORPHAN_AGE_MS })
  app.decorate('files', service)
  app.decorate('blobSweep', sweep)
  app.addHook('onReady', async () => { sweep.start() })
  app.addHook('onClose', async () => {
    await sweep.stop()
    await service.close()
  })
}, { name: 'files', dependencies: ['database', 'metrics'] })
