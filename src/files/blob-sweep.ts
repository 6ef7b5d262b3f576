import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../db/schema.js'
import { write } from '../db/write.js'
import type { BlobStore } from './blob-store.js'
import { knownBlobs, releaseLease, takeLease, unreferencedBlobs } from './file.repository.js'
import type { FileService } from './file.service.js'

// The sweep: removes from the storage the bytes no file refers to. Two kinds:
// - blobs whose last file went without its removal finishing: a post or a user deleted (their
//   files go with them, by the database's cascade), an instance stopped in the middle of one;
// - bytes with no row at all, older than an hour: an upload that stopped between storing its
//   bytes and committing its row (a crash, a refused commit). The hour leaves uploads in flight
//   alone; removing their bytes would not lose them either (file.service.ts), only make them
//   store the bytes again.
// One instance sweeps at a time (a lease in the database); each removal is itself safe against
// every upload and every other removal, so the lease saves work, not data.

const LEASE = 'blob-sweep'
const BATCH = 100

export interface BlobSweepOptions {
  db: Db
  store: BlobStore
  files: FileService
  log: FastifyBaseLogger
  /** Between two sweeps. */
  intervalMs: number
  /** Bytes without a row are removed once this old. */
  orphanAgeMs: number
}

export class BlobSweep {
  readonly #options: BlobSweepOptions
  readonly #holder = randomUUID()
  #timer: NodeJS.Timeout | undefined
  #running: Promise<unknown> | undefined

  constructor (options: BlobSweepOptions) {
    this.#options = options
  }

  start (): void {
    this.#timer = setInterval(() => { void this.#tick() }, this.#options.intervalMs).unref()
  }

  async #tick (): Promise<void> {
    if (this.#running !== undefined) return
    this.#running = this.run().catch((error: unknown) => { this.#options.log.warn({ err: error }, 'the sweep of unreferenced files failed; it runs again later') })
    await this.#running
    this.#running = undefined
  }

  /** One sweep, if this instance gets the lease: how many blobs it removed (undefined: another instance sweeps). */
  async run (): Promise<number | undefined> {
    const { db, store, files, intervalMs, orphanAgeMs } = this.#options
    if (!await write(db, async (trx) => await takeLease(trx, LEASE, this.#holder, Math.max(intervalMs, 60_000)))) return undefined
    let removed = 0
    try {
      // Blobs with a row and no file.
      for (let round = 0; round < 1000; round++) {
        const keys = await unreferencedBlobs(db, BATCH)
        let gone = 0
        for (const key of keys) if (await files.removeIfUnreferenced(key)) gone++
        removed += gone
        if (keys.length < BATCH || gone === 0) break
      }
      // Bytes without a row.
      const before = Date.now() - orphanAgeMs
      let page: string[] = []
      const sweepPage = async (): Promise<void> => {
        const known = await knownBlobs(db, page)
        for (const key of page) if (!known.has(key) && await files.removeIfUnreferenced(key)) removed++
        page = []
      }
      const seen = new Set<string>()
      for await (const blob of store.list()) {
        const key = blob.key.slice(0, 64)
        if (blob.modified.getTime() >= before || seen.has(key)) continue
        seen.add(key)
        page.push(key)
        if (page.length === 500) await sweepPage()
      }
      await sweepPage()
    } finally {
      await write(db, async (trx) => { await releaseLease(trx, LEASE, this.#holder) })
    }
    if (removed > 0) this.#options.log.info({ removed }, 'removed the stored files no row refers to')
    return removed
  }

  async stop (): Promise<void> {
    clearInterval(this.#timer)
    await this.#running
  }
}
