import { once } from 'node:events'
import { createWriteStream } from 'node:fs'
import type { Readable } from 'node:stream'
import type busboy from 'busboy'
import type { FastifyRequest } from 'fastify'
import { ApiError, validationError } from '../http/errors.js'
import { lazyRequire } from '../lazy-require.js'

// Required at the first multipart upload, not at start (docs/PERFORMANCE.md, Memory).
const multipart = lazyRequire<typeof busboy>('busboy')

// An upload's body, written to a file as it arrives: JavaScript holds one piece of it at a time
// (the socket's chunks, 64 KiB at most), whatever its size. Two forms are taken (docs/files.md):
// the file itself as the body, or `multipart/form-data` with one part named `file` (a plain HTML
// form). The size is checked twice: a Content-Length above the limit is refused before a byte is
// read (uploads.ts, with the headers), and a body that grows past it is cut off there.
// What is read is never more than the limit and one piece.

/** The media types an upload may declare; the type itself is decided by the bytes (image-type.ts). */
export const UPLOAD_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/avif', 'image/gif', 'multipart/form-data', 'application/octet-stream'] as const

/** What a form may hold besides its file's bytes. */
export const FORM_OVERHEAD = 16 * 1024

export class UploadTooLarge extends ApiError {
  constructor (maxBytes: number) {
    super('PAYLOAD_TOO_LARGE', { message: `A file may have at most ${maxBytes} bytes (FILE_MAX_BYTES).` })
  }
}

function cutOff (): ApiError {
  return validationError([{ field: 'file', message: 'was not received whole: the request ended before the end of its body' }])
}

/** The declared media type, without its parameters, in lower case. */
export function declaredType (request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase()
}

/**
 * Copies `source` to the file at `path`, refusing it once it passes `maxBytes`. The source is
 * left as it is on a refusal, never destroyed: it may be the request itself, whose connection
 * must still carry the answer (pipeline() would destroy it, and the socket with it).
 */
async function copyBounded (source: Readable, path: string, maxBytes: number): Promise<number> {
  const file = createWriteStream(path, { flags: 'wx', mode: 0o600 })
  // Kept, not thrown from an event: a failed write (a full disk), or a write in flight when a
  // refusal destroys the file, must not become an uncaught error of the process.
  let failed: Error | undefined
  file.on('error', (error) => { failed ??= error })
  let size = 0
  try {
    try {
      for await (const chunk of source.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
        size += chunk.length
        if (size > maxBytes) throw new UploadTooLarge(maxBytes)
        if (failed !== undefined) throw failed
        if (!file.write(chunk)) await once(file, 'drain')
      }
    } catch (error) {
      // The body itself failing is the client's doing (it went away mid-upload), not the service's.
      if (error instanceof ApiError || error === failed) throw error
      throw cutOff()
    }
    await new Promise<void>((resolve, reject) => { file.end((error?: Error | null) => { if (error === undefined || error === null) resolve(); else reject(error) }) })
    return size
  } finally {
    if (!file.writableFinished) file.destroy()
  }
}

export interface ReceivedUpload {
  /** The bytes' size. */
  size: number
  /** What the client declared (the body's Content-Type, or the part's): `application/octet-stream` and none say nothing. */
  declared: string | undefined
}

/**
 * Writes the upload in the request's body to `path`. A multipart body must hold exactly one part,
 * a file named `file`; anything else in it is a 400 on `file`, read no further.
 */
export async function receiveUpload (request: FastifyRequest, body: Readable, path: string, maxBytes: number): Promise<ReceivedUpload> {
  const type = declaredType(request)
  if (type !== 'multipart/form-data') {
    const size = await copyBounded(body, path, maxBytes)
    return { size, declared: type === 'application/octet-stream' ? undefined : type }
  }
  return await new Promise<ReceivedUpload>((resolve, reject) => {
    let parser: busboy.Busboy
    try {
      // Limits of busboy's own: one file, no field (each past its limit is an event below); the file's size is ours (copyBounded).
      parser = multipart()({ headers: request.headers as busboy.BusboyConfig['headers'], limits: { files: 1, fields: 0, fieldNameSize: 100, headerPairs: 20 } })
    } catch {
      reject(validationError([{ field: 'file', message: 'is not a multipart/form-data body with a boundary' }]))
      return
    }
    let received: Promise<ReceivedUpload> | undefined
    const wrong = (message: string): void => {
      body.unpipe(parser)
      reject(validationError([{ field: 'file', message }]))
    }
    parser.on('file', (name, stream, info) => {
      if (name !== 'file') {
        stream.resume()
        wrong(`must be the form's one part, named "file" (got "${name}")`)
        return
      }
      const declared = info.mimeType.toLowerCase()
      received = copyBounded(stream, path, maxBytes).then((size) => ({ size, declared: declared === 'application/octet-stream' ? undefined : declared }))
      // Busboy pauses at the file's end until it is read: the copy reads it, and on an error the rest is left unread.
      received.catch((error: unknown) => { body.unpipe(parser); reject(error) })
    })
    parser.on('field', (name) => { wrong(`must be the form's one part, a file (got the field "${name}")`) })
    parser.on('fieldsLimit', () => { wrong('must be the form\'s one part, a file (a field was sent)') })
    parser.on('filesLimit', () => { wrong('must be the form\'s one part: one file') })
    parser.on('error', () => { wrong('is not a well-formed multipart/form-data body') })
    parser.on('close', () => {
      if (received === undefined) wrong('is required: a part named "file" holding the image')
      else received.then(resolve, reject)
    })
    // The form around the file (boundaries, part headers, a preamble) is bounded too.
    let read = 0
    body.on('data', (chunk: Buffer) => {
      read += chunk.length
      if (read > maxBytes + FORM_OVERHEAD) {
        body.unpipe(parser)
        reject(new UploadTooLarge(maxBytes))
      }
    })
    body.on('error', () => { reject(cutOff()) })
    body.pipe(parser)
  })
}
