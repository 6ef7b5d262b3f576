import type { Readable } from 'node:stream'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { authenticate } from '../auth/authentication.js'
import { requires, type Scope } from '../auth/scopes.js'
import type { ErrorCode } from '../http/errors.js'
import { validationError } from '../http/errors.js'
import { AUTH_ERRORS, errorResponses, IdParams, LOCATION_HEADER, NoContent, success } from '../http/schemas.js'
import type { ImageOwnerSpec } from './file.service.js'
import { storedImage } from './file.repository.js'
import { toImage } from './image.representation.js'
import { Image, ImageParams } from './image.schemas.js'
import { acceptUploads, UPLOAD_OPERATIONS } from './uploads.js'

// The two operations on an owner's images, the same for a product, a post and a user's avatar:
// add one (POST …/images, 201; the avatar: PUT …/avatar, 200, replacing the last) and remove one
// (DELETE …/images/{imageId}, or …/avatar, 204). Each owner's feature gives who owns the images
// and who may change them (ImageOwnerSpec); the upload itself is files/file.service.ts's.

export interface ImageRoutesOptions<Row> {
  /** `/products/:id/images` (a collection, added to by POST) or `/users/:id/avatar` (one, replaced by PUT). */
  path: string
  collection: boolean
  tag: string
  /** Names the operations: addProductImage, removeProductImage (collection) or putUserAvatar, removeUserAvatar. */
  operations: { add: string, remove: string }
  /** What the owner is, in the operations' texts. */
  noun: string
  /** The API key scope that may call them; undefined: a log-in token only. */
  scope: Scope | undefined
  /** Who may, in the operations' texts. */
  who: string
  /** The codes the owner's checks answer (its 404, its 403). */
  errors: ErrorCode[]
  spec: (request: FastifyRequest, id: bigint) => ImageOwnerSpec<Row>
}

export async function registerImageRoutes<Row> (app: FastifyInstance, options: ImageRoutesOptions<Row>): Promise<void> {
  await app.register(async (scope) => {
    acceptUploads(scope)
    const base = app.config.publicUrl
    const security = requires(options.scope ?? 'session')
    const limits = options.collection ? 'at most as many as its limit (409 TOO_MANY_IMAGES)' : 'it replaces the one before'
    if (!UPLOAD_OPERATIONS.has(options.operations.add)) throw new Error(`${options.operations.add} is not among the upload operations the OpenAPI document gives a file body`)

    scope.route({
      method: options.collection ? 'POST' : 'PUT',
      url: options.path,
      onRequest: authenticate,
      config: { upload: true },
      schema: {
        tags: [options.tag],
        operationId: options.operations.add,
        summary: options.collection ? `Add an image to a ${options.noun}` : `Set the ${options.noun}`,
        description: `${options.who}. The body is the image itself (\`Content-Type\` image/jpeg, image/png, image/webp, image/avif or image/gif) or \`multipart/form-data\` with one part named \`file\`. ` +
          'The type is judged by the bytes alone (415 for anything else, or when the declared type disagrees); at most FILE_MAX_BYTES (10 MiB by default; 413 before the body is read when Content-Length says more), 40 megapixels and 8,000 pixels a side (413). ' +
          `Stored without metadata and turned upright, with WebP variants \`thumb\` (200×200) and \`medium\` (800×800), made once; ${limits}. ` +
          'Answered once the bytes are durable in the storage and the row committed; 503 with Retry-After when too many images are being processed.',
        security,
        params: IdParams,
        response: {
          [options.collection ? 201 : 200]: success(Image, { description: 'The image as stored.', ...(options.collection ? { headers: LOCATION_HEADER } : {}) }),
          ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', ...options.errors, ...(options.collection ? ['TOO_MANY_IMAGES' as const] : []))
        }
      },
      handler: async (request, reply) => {
        const body = request.body as Readable | undefined
        if (body === undefined) throw validationError([{ field: 'file', message: 'is required: send the image as the body' }])
        const { id } = request.params as { id: string }
        const { file } = await scope.files.upload(request, body, options.spec(request, BigInt(id)))
        const image = toImage(storedImage(file), base)
        if (options.collection) void reply.code(201).header('location', `/v1/files/${file.id}`)
        return image
      }
    })

    scope.route({
      method: 'DELETE',
      url: options.collection ? `${options.path}/:imageId` : options.path,
      onRequest: authenticate,
      schema: {
        tags: [options.tag],
        operationId: options.operations.remove,
        summary: options.collection ? `Remove an image of a ${options.noun}` : `Remove the ${options.noun}`,
        description: `${options.who}. Its address answers 404 FILE_NOT_FOUND from then on; its bytes are removed from the storage after the change is committed (unless another file has the same bytes).`,
        security,
        params: options.collection ? ImageParams : IdParams,
        response: { 204: NoContent, ...errorResponses(...AUTH_ERRORS, 'VALIDATION_ERROR', ...options.errors, 'FILE_NOT_FOUND') }
      },
      handler: async (request, reply) => {
        const { id, imageId } = request.params as { id: string, imageId?: string }
        await scope.files.remove(options.spec(request, BigInt(id)), imageId === undefined ? undefined : BigInt(imageId))
        return await reply.code(204).send()
      }
    })
  })
}
