import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type TSchema } from '@sinclair/typebox'
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { toIso } from '../db/types.js'
import { ApiError } from '../http/errors.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { COMMON_HEADERS, empty, ETAG_HEADER, unlimitedErrorResponses } from '../http/schemas.js'
import { findFile } from './file.repository.js'
import { IMAGE_TYPES } from './image-type.js'
import { unlessStorageFails } from './file.service.js'
import { FileParams, VariantParams } from './image.schemas.js'
import type { VariantName } from './image-processing.js'

// Serving a file's bytes: GET and HEAD /v1/files/{fileId} (the stored original) and
// /v1/files/{fileId}/{variant} (thumb, medium). A file's bytes never change under its address,
// so caches keep them a year (`immutable`); the ETag is the bytes' SHA-256. One range (`Range:
// bytes=…`) is answered 206; several ranges, or one that cannot be read, are answered with the
// whole file (RFC 9110 14.2 lets a server ignore Range); a range past the end is 416. The
// answers are images for a page to show, never a document to run: `nosniff`, a sandboxing
// Content-Security-Policy, `inline`. Reads are not counted by the general rate limit (a page
// shows many images); they are public, as the resources that show them are.

const FILE_CSP = "default-src 'none'; sandbox"
const IMMUTABLE = 'public, max-age=31536000, immutable'

const FILE_HEADERS = {
  ...ETAG_HEADER,
  'cache-control': Type.String({ description: `\`${IMMUTABLE}\`: the bytes never change under this address.` }),
  'last-modified': Type.String({ description: 'When the file was uploaded.' }),
  'accept-ranges': Type.String({ description: '`bytes`.' }),
  'content-security-policy': Type.String({ description: `\`${FILE_CSP}\`.` }),
  'content-disposition': Type.String({ description: '`inline`: shown, not saved.' })
}

function bytesResponse (description: string, headers: Record<string, TSchema> = {}): TSchema {
  return Type.Unsafe({
    description,
    headers: { ...COMMON_HEADERS, ...FILE_HEADERS, ...headers },
    content: Object.fromEntries(IMAGE_TYPES.map((type) => [type, { schema: { type: 'string', format: 'binary' } }]))
  })
}

const RangeHeaders = Type.Object({
  range: Type.Optional(Type.String({ description: 'One range, `bytes=START-END`, `bytes=START-` or `bytes=-LAST`: answered 206. Several ranges are answered with the whole file.' })),
  'if-range': Type.Optional(Type.String({ description: 'The ETag: the range is answered only while it matches, else the whole file.' })),
  'if-none-match': Type.Optional(Type.String({ description: 'The ETag: 304 while it matches.' }))
})

type Range = { start: number, end: number } | 'unsatisfiable' | undefined

/** The one range a `Range` header asks for within `size` bytes; undefined to send the whole file. */
function rangeOf (header: string | undefined, size: number): Range {
  if (header === undefined) return undefined
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null) return undefined
  const [, first = '', last = ''] = match
  if (first === '' && last === '') return undefined
  if (first === '') {
    const suffix = Number(last)
    if (suffix === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  const end = last === '' ? Number.MAX_SAFE_INTEGER : Number(last)
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return undefined
  if (start >= size) return 'unsatisfiable'
  return { start, end: Math.min(end, size - 1) }
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db } = app
  const store = app.files.store

  async function serve (request: FastifyRequest, reply: FastifyReply, id: string, variant: VariantName | undefined): Promise<FastifyReply> {
    const file = await findFile(db, BigInt(id))
    if (file === undefined) throw new ApiError('FILE_NOT_FOUND')
    const key = variant === undefined ? file.blob_key : `${file.blob_key}.${variant}`
    const size = Number(variant === undefined ? file.size : variant === 'thumb' ? file.thumb_size : file.medium_size)
    const etag = `"${key}"`
    const ifRange = request.headers['if-range']
    const range = ifRange === undefined || (typeof ifRange === 'string' && ifRange.trim() === etag) ? rangeOf(request.headers.range, size) : undefined
    const ifNoneMatch = request.headers['if-none-match']
    const unchanged = ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => { const t = tag.trim().replace(/^W\//, ''); return t === etag || t === '*' })
    // A refusal is not cached as the file is: its headers come only with the bytes (or a 304).
    if (range === 'unsatisfiable' && !unchanged) {
      throw new ApiError('RANGE_NOT_SATISFIABLE', { headers: { 'content-range': `bytes */${size}` } })
    }
    // A file's bytes, asked for before any of its headers is set: a failure of the storage is an
    // error answer, which must not carry the file's year-long caching.
    const head = request.method === 'HEAD' || unchanged || range === 'unsatisfiable'
    const read = head ? undefined : await unlessStorageFails(async () => await store.read(key, range, size))
    // A row whose bytes the storage does not have is a fault of the storage, not the client's.
    if (!head && read === undefined) throw new Error(`the storage has no bytes for file ${file.id} (${key})`)
    void reply.headers({
      etag,
      'cache-control': IMMUTABLE,
      'last-modified': new Date(toIso(file.created_at)).toUTCString(),
      'accept-ranges': 'bytes',
      'content-security-policy': FILE_CSP,
      'content-disposition': 'inline'
    })
    // (An unsatisfiable range is here only with a matching If-None-Match, which comes first.)
    if (unchanged || range === 'unsatisfiable') return await reply.code(304).send()
    void reply.type(variant === undefined ? file.content_type : 'image/webp')
    if (range !== undefined) void reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${size}`)
    void reply.header('content-length', range === undefined ? size : range.end - range.start + 1)
    // Fastify's HEAD route keeps the Content-Length of a stream (of any other answer it counts the body).
    return await reply.send(read === undefined ? Readable.from([]) : read.body)
  }

  const responses = {
    200: bytesResponse('The bytes: the stored original (its own type) or the variant (WebP).'),
    206: bytesResponse('The range asked for.', { 'content-range': Type.String({ description: '`bytes START-END/SIZE`.' }) }),
    304: empty('Not modified: the If-None-Match tag still matches.', FILE_HEADERS),
    ...unlimitedErrorResponses('VALIDATION_ERROR', 'FILE_NOT_FOUND', 'RANGE_NOT_SATISFIABLE')
  }

  app.get('/files/:fileId', {
    schema: {
      tags: ['files'],
      operationId: 'getFile',
      summary: 'Read a file\'s bytes (an image as stored)',
      description: 'Public. The stored original: its own format and pixels, turned upright, without metadata. ETag (the SHA-256), If-None-Match → 304, one Range → 206 (past the end: 416), cached a year. HEAD answers the same headers.',
      security: [],
      params: FileParams,
      headers: RangeHeaders,
      response: responses
    }
  }, async (request, reply) => await serve(request, reply, request.params.fileId, undefined))

  app.get('/files/:fileId/:variant', {
    schema: {
      tags: ['files'],
      operationId: 'getFileVariant',
      summary: 'Read a variant of an image: `thumb` or `medium`',
      description: 'Public. WebP, made once at upload: `thumb` within 200×200 pixels, `medium` within 800×800 (never enlarged). The same headers, ranges and caching as the original.',
      security: [],
      params: VariantParams,
      headers: RangeHeaders,
      response: responses
    }
  }, async (request, reply) => await serve(request, reply, request.params.fileId, request.params.variant))
}

export const fileRoutes = fp(routes, { name: 'file-routes', dependencies: [...FEATURE_PREREQUISITES, 'files'], encapsulate: true })
