import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { Counter, Histogram, type Registry } from 'prom-client'
import { SlotsFull, WorkSlots } from '../background/work-slots.js'
import type { DialectName } from '../db/database.js'
import type { Db, Executor } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { afterCommit, write } from '../db/write.js'
import { ApiError, serviceUnavailable } from '../http/errors.js'
import type { BlobStore } from './blob-store.js'
import { beginRemoval, blobExists, blobRemoving, claimOrphan, deleteFile, filesOf, forgetBlob, insertFile, registerBlob, type Owner } from './file.repository.js'
import type { FileRow } from './file.table.js'
import { ImageProcess } from './image-process.js'
import { DEFAULT_IMAGE_LIMITS, VARIANTS, type ImageLimits, type ProcessedImage, type VariantName } from './image-processing.js'
import { receiveUpload } from './upload-body.js'

// Uploads, from the body to a committed row, and removals, from the commit to the storage.
//
// No row ever refers to bytes the storage does not hold, and no bytes stay that no row refers to
// (docs/files.md):
// - An upload stores its bytes (the original and its two variants) first, then, in one
//   transaction, registers the blob (`blobs`, by its content address), writes the file's row and
//   its owner's images, and records the event. A crash before the commit leaves bytes without a
//   row, which the sweep removes (blob-sweep.ts).
// - A removal begins only after the commit that took the last reference away, and only under
//   the blob's row lock, by a statement that sees every committed file: it marks the blob as
//   being removed, removes the bytes, then forgets the blob.
// - An upload checks, under the blob's row lock and before it commits, that its blob is not
//   being removed and that the storage holds its bytes (a removal may have taken them between
//   the put and the lock). If not, it waits for the removal to end, stores the bytes again and
//   tries again. So whatever the order of uploads and removals of the same bytes, on any number
//   of instances, a committed file's bytes are in the storage.

/** Who owns the image: found and locked, checked, and shown anew once its images change. */
export interface ImageOwnerSpec<Row> {
  owner: Owner
  /** Most images the owner may hold (undefined: one, replaced: the avatar). */
  max: number | undefined
  /** The owner, locked for the rest of the transaction (PostgreSQL: FOR UPDATE); undefined when it is gone (404). */
  lock: (trx: Executor) => Promise<Row | undefined>
  notFound: ApiError
  /** Throws 403 when the caller may not change the owner's images. */
  authorize: (row: Row) => void
  /** Writes the owner's images (oldest first) to its row and records its event. */
  save: (trx: Executor, row: Row, images: FileRow[], now: string) => Promise<void>
}

export interface FileServiceOptions {
  db: Db
  dialect: DialectName
  store: BlobStore
  /** The backup's copy (BACKUP_URL with local storage): every blob is stored there too before its upload is acknowledged. */
  backup?: BlobStore | undefined
  maxBytes: number
  limits?: ImageLimits
  /** Images processed at once, and waiting for a slot; past those, 503. */
  slots?: number
  line?: number
  log: FastifyBaseLogger
  registry: Registry
}

export type Refusal = 'too-large' | 'not-an-image' | 'polyglot' | 'undecodable' | 'too-many-pixels' | 'type-mismatch' | 'too-many-images' | 'busy'

/** How long an upload waits for a removal of the same bytes to end, at most, before it answers 503. */
const REMOVAL_WAIT_MS = 10_000

export class FileService {
  readonly store: BlobStore
  readonly backup: BlobStore | undefined
  readonly maxBytes: number
  readonly #db: Db
  readonly #dialect: DialectName
  readonly #limits: ImageLimits
  readonly #slots: WorkSlots
  readonly #images: ImageProcess
  readonly #log: FastifyBaseLogger
  readonly #metrics: { uploads: Counter, bytes: Counter, refused: Counter<'reason'>, processing: Histogram }

  constructor (options: FileServiceOptions) {
    this.store = options.store
    this.backup = options.backup
    this.maxBytes = options.maxBytes
    this.#db = options.db
    this.#dialect = options.dialect
    this.#limits = options.limits ?? DEFAULT_IMAGE_LIMITS
    // libvips decodes a 40-megapixel image in about half a gigabyte: two at once, eight waiting.
    this.#slots = new WorkSlots(options.slots ?? 2, options.line ?? 8)
    this.#images = new ImageProcess(options.log)
    this.#log = options.log
    const registers = [options.registry]
    this.#metrics = {
      uploads: new Counter({ name: 'file_uploads_total', help: 'Images stored (uploads acknowledged with 201 or 200).', registers }),
      bytes: new Counter({ name: 'file_upload_bytes_total', help: 'Bytes of the images stored, as stored (originals without metadata, and their variants).', registers }),
      refused: new Counter({ name: 'file_uploads_refused_total', help: 'Uploads refused, by reason.', labelNames: ['reason'], registers }),
      processing: new Histogram({ name: 'file_processing_seconds', help: 'Time to check, orient, strip and size one image (in its slot).', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers })
    }
    // Every reason from the start, so that a rate or an absence can be alerted on.
    for (const reason of ['too-large', 'not-an-image', 'polyglot', 'undecodable', 'too-many-pixels', 'type-mismatch', 'too-many-images', 'busy'] satisfies Refusal[]) this.#metrics.refused.inc({ reason }, 0)
  }

  #refuse (reason: Refusal, error: ApiError): ApiError {
    this.refused(reason)
    return error
  }

  /** Counts a refusal made before the upload reached this service (its headers: files/uploads.ts). */
  refused (reason: Refusal): void {
    this.#metrics.refused.inc({ reason })
  }

  /**
   * Takes the upload in the request's body for the owner: 201's image row, once its bytes are
   * durable and its row committed. Checks before reading the body: the owner exists (404), the
   * caller may (403), it has room (409), a slot could be had (503).
   */
  async upload<Row> (request: FastifyRequest, body: Readable, spec: ImageOwnerSpec<Row>): Promise<{ file: FileRow, replaced: FileRow | undefined }> {
    const row = await spec.lock(this.#db)
    if (row === undefined) throw spec.notFound
    spec.authorize(row)
    if (spec.max !== undefined && (await filesOf(this.#db, spec.owner)).length >= spec.max) throw this.#refuse('too-many-images', new ApiError('TOO_MANY_IMAGES'))
    if (this.#slots.full) throw this.#refuse('busy', busy())

    const folder = await mkdtemp(join(tmpdir(), 'upload-'))
    try {
      const upload = join(folder, 'upload')
      let received
      try {
        received = await receiveUpload(request, body, upload, this.maxBytes)
      } catch (error) {
        if (error instanceof ApiError && error.code === 'PAYLOAD_TOO_LARGE') throw this.#refuse('too-large', error)
        throw error
      }
      const made = await this.#process(upload, folder)
      if (received.declared !== undefined && received.declared !== made.type) {
        throw this.#refuse('type-mismatch', new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: `The file is ${made.type}, not the ${received.declared} it was sent as.` }))
      }
      await this.#put(made)
      const key = made.original.sha256
      for (let attempt = 1; ; attempt++) {
        try {
          const stored = await write(this.#db, async (trx) => await this.#commit(trx, spec, made))
          this.#metrics.uploads.inc()
          this.#metrics.bytes.inc(made.original.size + made.variants.thumb.size + made.variants.medium.size)
          if (stored.replaced !== undefined) this.#removeLater(stored.replaced.blob_key)
          return stored
        } catch (error) {
          if (!(error instanceof BlobNotHeld) || attempt === 3) {
            // Nothing of a refused upload is kept: its bytes go unless another file has them.
            this.#removeLater(key)
            throw error instanceof BlobNotHeld ? this.#refuse('busy', busy()) : error
          }
          await this.#removalEnded(key)
          await this.#put(made)
        }
      }
    } finally {
      await rm(folder, { recursive: true, force: true })
    }
  }

  async #process (upload: string, folder: string): Promise<ProcessedImage> {
    let result
    try {
      result = await this.#slots.run(async () => {
        const started = performance.now()
        try {
          return await this.#images.run(upload, folder, this.#limits)
        } finally {
          this.#metrics.processing.observe((performance.now() - started) / 1000)
        }
      })
    } catch (error) {
      if (error instanceof SlotsFull) throw this.#refuse('busy', busy())
      throw error
    }
    if (!('refused' in result)) return result
    switch (result.refused) {
      case 'too-many-pixels':
        throw this.#refuse('too-many-pixels', new ApiError('PAYLOAD_TOO_LARGE', { message: `The image has ${result.width} × ${result.height} pixels; at most ${this.#limits.maxSide} a side and ${this.#limits.maxPixels / 1_000_000} megapixels are taken.` }))
      case 'polyglot':
        throw this.#refuse('polyglot', new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: 'The file is an image and also something else (markup, a document or an archive inside): it is not taken.' }))
      case 'not-an-image':
        throw this.#refuse('not-an-image', new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: 'The file is not a JPEG, PNG, WebP, AVIF or GIF image (judged by its bytes).' }))
      case 'undecodable':
        throw this.#refuse('undecodable', new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: 'The file starts like an image but is not one that can be read (damaged, truncated, or another type).' }))
    }
  }

  /** The original and its variants, durable in the storage (and in the backup's copy). */
  async #put (made: ProcessedImage): Promise<void> {
    const key = made.original.sha256
    const blobs: Array<[string, string, string]> = [[key, made.original.path, made.type], ...(Object.keys(VARIANTS) as VariantName[]).map((name): [string, string, string] => [`${key}.${name}`, made.variants[name].path, 'image/webp'])]
    await unlessStorageFails(async () => {
      await Promise.all([this.store, this.backup].flatMap((store) => store === undefined ? [] : blobs.map(async ([k, path, type]) => { await store.put(k, path, type) })))
    })
  }

  async #commit<Row> (trx: Executor, spec: ImageOwnerSpec<Row>, made: ProcessedImage): Promise<{ file: FileRow, replaced: FileRow | undefined }> {
    const now = nowIso()
    const row = await spec.lock(trx)
    if (row === undefined) throw spec.notFound
    spec.authorize(row)
    const images = await filesOf(trx, spec.owner)
    let replaced: FileRow | undefined
    if (spec.max === undefined && images.length > 0) {
      replaced = await deleteFile(trx, spec.owner, images[0]!.id)
      images.length = 0
    } else if (spec.max !== undefined && images.length >= spec.max) {
      throw this.#refuse('too-many-images', new ApiError('TOO_MANY_IMAGES'))
    }
    const key = made.original.sha256
    if ((await registerBlob(trx, key, now)).removing || !await this.#held(made)) throw new BlobNotHeld()
    const file = await insertFile(trx, {
      key,
      contentType: made.type,
      size: made.original.size,
      width: made.width,
      height: made.height,
      thumbSize: made.variants.thumb.size,
      mediumSize: made.variants.medium.size,
      owner: spec.owner,
      now
    })
    await spec.save(trx, row, [...images, file], now)
    return { file, replaced }
  }

  /** Whether the storage holds the image's bytes, all three. */
  async #held (made: ProcessedImage): Promise<boolean> {
    const key = made.original.sha256
    const sizes = await unlessStorageFails(async () => await Promise.all([this.store.size(key), this.store.size(`${key}.thumb`), this.store.size(`${key}.medium`)]))
    return sizes[0] === made.original.size && sizes[1] === made.variants.thumb.size && sizes[2] === made.variants.medium.size
  }

  /** Removes the owner's image: 404 FILE_NOT_FOUND when it has no such image. Its bytes go after the commit. */
  async remove<Row> (spec: ImageOwnerSpec<Row>, id: bigint | undefined): Promise<void> {
    await write(this.#db, async (trx) => {
      const row = await spec.lock(trx)
      if (row === undefined) throw spec.notFound
      spec.authorize(row)
      const images = await filesOf(trx, spec.owner)
      const file = id === undefined ? images[0] : images.find((image) => image.id === id)
      if (file === undefined) throw new ApiError('FILE_NOT_FOUND')
      await deleteFile(trx, spec.owner, file.id)
      await spec.save(trx, row, images.filter((image) => image.id !== file.id), nowIso())
      afterCommit(trx, () => { this.#removeLater(file.blob_key) })
    })
  }

  /** Removes the blob's bytes if no file refers to them, in the background (the sweep finishes what fails). */
  #removeLater (key: string): void {
    this.removeIfUnreferenced(key).catch((error: unknown) => {
      this.#log.warn({ err: error, blob: key }, 'a blob no file refers to was not removed; the sweep will try again')
    })
  }

  /**
   * Removes the blob (its original and variants) from the storage if no file refers to it: its
   * removal is marked first (a blob with a row) or it is claimed (a blob without one), then its
   * bytes go, then its row. True when it was removed.
   */
  async removeIfUnreferenced (key: string): Promise<boolean> {
    const claimed = await write(this.#db, async (trx) => await blobExists(trx, key) ? await beginRemoval(trx, this.#dialect, key) : await claimOrphan(trx, key, nowIso()))
    if (!claimed) return false
    await Promise.all([key, `${key}.thumb`, `${key}.medium`].map(async (k) => { await this.store.remove(k) }))
    await write(this.#db, async (trx) => { await forgetBlob(trx, key) })
    return true
  }

  async #removalEnded (key: string): Promise<void> {
    const deadline = Date.now() + REMOVAL_WAIT_MS
    while (await blobRemoving(this.#db, key)) {
      if (Date.now() > deadline) throw this.#refuse('busy', busy())
      await sleep(50)
    }
  }

  async close (): Promise<void> {
    await this.#images.close()
    await this.store.close()
    await this.backup?.close()
  }
}

/** The blob an upload would refer to is being removed, or its bytes were: wait, store them again, try again. */
class BlobNotHeld extends Error {}

/** Runs an operation of the storage: its failure (the store down, refusing) is a 503 to the client, not a fault of the service. */
export async function unlessStorageFails<T> (operation: () => Promise<T>): Promise<T> {
  try {
    return await operation()
  } catch (error) {
    throw serviceUnavailable({ message: 'The storage of files cannot be reached now. Try again in a few seconds.', cause: error })
  }
}

function busy (): ApiError {
  return serviceUnavailable({ message: 'Too many images are being processed now. Try again in a few seconds.' })
}
