import type { Readable } from 'node:stream'

// Where the bytes of files live: one small interface, two implementations (a folder, an S3
// bucket). Keys are content addresses (the SHA-256 of the bytes, hex, with a suffix naming a
// variant), so the same bytes are stored once and a key's bytes never change: a put of a key
// that exists has nothing to do, and a reader never sees half of a put.

/** Bytes, or the path of a file holding them. */
export type BlobSource = Buffer | string

export interface StoredBlob {
  key: string
  /** When the blob was written (for the sweep: blobs no row refers to, older than an hour). */
  modified: Date
}

export interface BlobRead {
  /** The bytes asked for (the whole blob, or the range): a stream, or a few read whole. */
  body: Readable | Buffer
  /** The blob's whole size. */
  size: number
}

export interface BlobStore {
  /** What `STORAGE_URL` names, without credentials (for logs and the system's status). */
  readonly description: string
  /**
   * Stores the bytes (given, or the file at a path, read as a stream) under the key; resolves
   * once they are durable (on disk, synced; or acknowledged by the bucket).
   */
  put: (key: string, source: BlobSource, contentType: string) => Promise<void>
  /**
   * The blob's bytes from `start` to `end` inclusive (the whole blob without them), or undefined
   * when there is none. `size`, when the caller knows it (a file's row), spares asking for it.
   */
  read: (key: string, range?: { start: number, end: number }, size?: number) => Promise<BlobRead | undefined>
  /** The blob's size, or undefined when there is none. */
  size: (key: string) => Promise<number | undefined>
  /** Removes the blob; removing one that is not there is not an error. */
  remove: (key: string) => Promise<void>
  /** Every stored blob, for the sweep. */
  list: () => AsyncIterable<StoredBlob>
  close: () => Promise<void>
}

/** A key is the hex SHA-256 of the bytes, optionally `.thumb` or `.medium`: nothing a path or a bucket could misread. */
export const BLOB_KEY = /^[0-9a-f]{64}(\.(thumb|medium))?$/

export function assertKey (key: string): void {
  if (!BLOB_KEY.test(key)) throw new Error(`not a blob key: ${key}`)
}
