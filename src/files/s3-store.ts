import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import type { Readable } from 'node:stream'
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3'
import { assertKey, BLOB_KEY, type BlobRead, type BlobSource, type BlobStore, type StoredBlob } from './blob-store.js'

// `STORAGE_URL=s3://bucket/prefix`: each blob an object `prefix/KEY`, through the AWS SDK, with
// the same AWS_* variables the backups read (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION; AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for an S3-compatible
// store, addressed path-style). A put resolves when the store has acknowledged the object,
// which S3 makes durable before it answers. Request checksums only where an operation requires
// them: the SDK's default since 3.729 adds CRC32 headers that S3-compatible stores (MinIO
// before 2025, R2, the test servers) refuse or mishandle.
//
// Every wait on the store is bounded (the SDK's defaults wait for ever), by `timeoutMs`
// (STORAGE_TIMEOUT_MS), so a store that takes the connection and never answers fails an upload
// or a read (503) instead of holding it: connecting; for a write, a removal, a size or a
// listing, each wait between the store's bytes; for a read, the wait for the answer to begin. A
// read's body then goes at the pace of the client it is streamed to: a client that stops
// reading for a while pauses it, and an inactivity bound there would cut that client's download.
//
// The SDK (some hundreds of modules) is loaded only when the service stores files in S3.

export interface S3Location {
  bucket: string
  /** Without a trailing slash; empty for the bucket's root. */
  prefix: string
}

/** The bucket and prefix of an `s3://bucket/prefix` URL. */
export function s3Location (url: URL): S3Location {
  return { bucket: url.hostname, prefix: url.pathname.replace(/^\/+|\/+$/g, '') }
}

const notFound = (error: unknown): boolean => {
  const e = error as { name?: string, $metadata?: { httpStatusCode?: number } }
  return e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata?.httpStatusCode === 404
}

export class S3Store implements BlobStore {
  readonly description: string
  readonly #client: S3Client
  /** The client of reads: no inactivity bound, so a paused body is not cut off. */
  readonly #reader: S3Client
  readonly #timeoutMs: number
  readonly #sdk: typeof import('@aws-sdk/client-s3')
  readonly #location: S3Location

  private constructor (sdk: typeof import('@aws-sdk/client-s3'), clients: { client: S3Client, reader: S3Client, timeoutMs: number }, location: S3Location) {
    this.#sdk = sdk
    this.#client = clients.client
    this.#reader = clients.reader
    this.#timeoutMs = clients.timeoutMs
    this.#location = location
    this.description = `s3://${location.bucket}${location.prefix === '' ? '' : `/${location.prefix}`}`
  }

  static async open (location: S3Location, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<S3Store> {
    const sdk = await import('@aws-sdk/client-s3')
    const endpoint = env.AWS_ENDPOINT_URL_S3 !== undefined && env.AWS_ENDPOINT_URL_S3 !== '' ? env.AWS_ENDPOINT_URL_S3 : env.AWS_ENDPOINT_URL
    const settings = {
      region: env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
      ...(endpoint !== undefined && endpoint !== '' ? { endpoint, forcePathStyle: true } : {}),
      // The keys from the environment given; without them, the SDK's own chain (a role of the
      // instance or the container, a profile).
      ...(env.AWS_ACCESS_KEY_ID !== undefined && env.AWS_ACCESS_KEY_ID !== '' && env.AWS_SECRET_ACCESS_KEY !== undefined
        ? { credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, ...(env.AWS_SESSION_TOKEN !== undefined && env.AWS_SESSION_TOKEN !== '' ? { sessionToken: env.AWS_SESSION_TOKEN } : {}) } }
        : {}),
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3
    } satisfies S3ClientConfig
    const client = new sdk.S3Client({ ...settings, requestHandler: { connectionTimeout: timeoutMs, socketTimeout: timeoutMs } })
    const reader = new sdk.S3Client({ ...settings, requestHandler: { connectionTimeout: timeoutMs } })
    return new S3Store(sdk, { client, reader, timeoutMs }, location)
  }

  #key (key: string): string {
    assertKey(key)
    return this.#location.prefix === '' ? key : `${this.#location.prefix}/${key}`
  }

  async put (key: string, source: BlobSource, contentType: string): Promise<void> {
    // A file goes as a stream of known length: one PUT, never read into memory whole.
    const size = typeof source === 'string' ? (await stat(source)).size : source.length
    await this.#client.send(new this.#sdk.PutObjectCommand({
      Bucket: this.#location.bucket,
      Key: this.#key(key),
      Body: typeof source === 'string' ? createReadStream(source) : source,
      ContentLength: size,
      ContentType: contentType
    }))
  }

  async read (key: string, range?: { start: number, end: number }): Promise<BlobRead | undefined> {
    // The object's answer names its size: a size the caller knows is not needed. The answer must
    // begin within the bound, its attempts together (then the body goes at the reader's pace).
    const late = new AbortController()
    const timer = setTimeout(() => { late.abort(new Error(`the store did not answer within ${this.#timeoutMs} ms`)) }, this.#timeoutMs)
    try {
      const answer = await this.#reader.send(new this.#sdk.GetObjectCommand({
        Bucket: this.#location.bucket,
        Key: this.#key(key),
        ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` })
      }), { abortSignal: late.signal })
      const whole = range === undefined ? answer.ContentLength : Number(/\/(\d+)$/.exec(answer.ContentRange ?? '')?.[1])
      if (whole === undefined || !Number.isSafeInteger(whole)) throw new Error(`the store named no size for ${key}`)
      return { body: answer.Body as Readable, size: whole }
    } catch (error) {
      if (late.signal.aborted) throw late.signal.reason as Error
      if (notFound(error)) return undefined
      throw error
    } finally {
      clearTimeout(timer)
    }
  }

  async size (key: string): Promise<number | undefined> {
    try {
      const answer = await this.#client.send(new this.#sdk.HeadObjectCommand({ Bucket: this.#location.bucket, Key: this.#key(key) }))
      return answer.ContentLength
    } catch (error) {
      if (notFound(error)) return undefined
      throw error
    }
  }

  async remove (key: string): Promise<void> {
    // S3 answers 204 whether or not the object was there.
    await this.#client.send(new this.#sdk.DeleteObjectCommand({ Bucket: this.#location.bucket, Key: this.#key(key) }))
  }

  async * list (): AsyncIterable<StoredBlob> {
    const prefix = this.#location.prefix === '' ? '' : `${this.#location.prefix}/`
    let token: string | undefined
    do {
      const page = await this.#client.send(new this.#sdk.ListObjectsV2Command({ Bucket: this.#location.bucket, ...(prefix === '' ? {} : { Prefix: prefix }), ContinuationToken: token }))
      for (const object of page.Contents ?? []) {
        const key = object.Key?.slice(prefix.length)
        // Only the store's own blobs: another tool's objects under the prefix are not the sweep's.
        if (key !== undefined && BLOB_KEY.test(key) && object.LastModified !== undefined) yield { key, modified: object.LastModified }
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
  }

  async close (): Promise<void> {
    this.#client.destroy()
    this.#reader.destroy()
  }
}
