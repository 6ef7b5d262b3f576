import { buffer } from 'node:stream/consumers'
import { join } from 'node:path'
import type { BackupTarget } from '../backups/backup.config.js'
import type { BlobStore } from './blob-store.js'
import { FolderStore } from './folder-store.js'
import { S3Store } from './s3-store.js'

// The backup's copy of the files (BACKUP_URL with local storage): every blob stored is also
// stored under `files/` of the backup target, beside the database's replica, before its upload
// is acknowledged; `npm run restore` copies them back. The copy keeps every blob it was given: a
// database restored to an earlier time may name bytes that were removed since.

/** The store of the files' copy under the backup target. */
export async function openBackupCopy (target: BackupTarget, aws: Record<string, string | undefined>, timeoutMs: number): Promise<BlobStore> {
  return target.kind === 'file'
    ? new FolderStore(join(target.dir, 'files'))
    : await S3Store.open({ bucket: target.bucket, prefix: target.path === '' ? 'files' : `${target.path}/files` }, aws, timeoutMs)
}

/** Copies every blob of the backup's copy that the storage does not hold (whole) into it. */
export async function restoreFiles (copy: BlobStore, storage: BlobStore): Promise<{ copied: number, present: number }> {
  let copied = 0
  let present = 0
  for await (const { key } of copy.list()) {
    const read = await copy.read(key)
    if (read === undefined) continue
    if (await storage.size(key) === read.size) {
      if (!Buffer.isBuffer(read.body)) read.body.destroy()
      present++
      continue
    }
    // A blob is at most FILE_MAX_BYTES (or a variant, smaller): read whole, one at a time.
    await storage.put(key, Buffer.isBuffer(read.body) ? read.body : await buffer(read.body), 'application/octet-stream')
    copied++
  }
  return { copied, present }
}
