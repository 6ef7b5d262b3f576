import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../http/errors.js'
import { IMAGE_TYPES } from './image-type.js'
import { declaredType, FORM_OVERHEAD, UploadTooLarge, UPLOAD_TYPES } from './upload-body.js'

// The body of an upload's route: not JSON but the file (or a form holding it), handed to the
// handler as the stream it arrives as. Registered in the upload routes' own scope, so that no
// other route takes such a body. A Content-Length above FILE_MAX_BYTES is refused here, before
// a byte of the body is read.

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes a file as its body (files/uploads.ts). */
    upload?: boolean
  }
}

const REFUSED = 'An upload\'s body is the image itself (Content-Type image/jpeg, image/png, image/webp, image/avif or image/gif) or multipart/form-data with one part named "file".'

export function acceptUploads (scope: FastifyInstance): void {
  const maxBytes = scope.config.files.maxBytes
  scope.removeAllContentTypeParsers()
  scope.addContentTypeParser([...UPLOAD_TYPES], (request: FastifyRequest, payload, done) => {
    // A form may hold a little more than its file (its boundaries and part headers).
    const allowed = declaredType(request) === 'multipart/form-data' ? maxBytes + FORM_OVERHEAD : maxBytes
    if (Number(request.headers['content-length']) > allowed) {
      scope.files.refused('too-large')
      done(new UploadTooLarge(maxBytes))
    } else {
      done(null, payload)
    }
  })
  scope.addContentTypeParser('*', (_request, _payload, done) => {
    scope.files.refused('not-an-image')
    done(new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: REFUSED }))
  })
}

/** The operations that take a file: the OpenAPI document gives each the request body below. */
export const UPLOAD_OPERATIONS: ReadonlySet<string> = new Set(['addProductImage', 'addPostImage', 'putUserAvatar'])

const BINARY = { type: 'string', format: 'binary' }

/** An upload's request body in the OpenAPI document: the image itself, or a form with it. */
export const UPLOAD_REQUEST_BODY = {
  required: true,
  description: 'The image: its bytes as the body, or a form with one part named `file`. The type is judged by the bytes.',
  content: {
    ...Object.fromEntries(IMAGE_TYPES.map((type) => [type, { schema: BINARY }])),
    'multipart/form-data': {
      schema: { type: 'object', required: ['file'], additionalProperties: false, properties: { file: { ...BINARY, description: 'The image.' } } },
      encoding: { file: { contentType: IMAGE_TYPES.join(', ') } }
    }
  }
}
