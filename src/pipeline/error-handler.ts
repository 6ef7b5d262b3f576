import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { isDatabaseUnavailable } from '../db/errors.js'
import { ApiError, serviceUnavailable, validationError } from '../http/errors.js'
import { sendProblem } from './problem.js'

// Fastify's own failures while reading a request, mapped onto catalogue codes.
const FRAMEWORK_CODES: Record<string, () => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => new ApiError('UNSUPPORTED_MEDIA_TYPE'),
  FST_ERR_CTP_INVALID_TYPE: () => new ApiError('UNSUPPORTED_MEDIA_TYPE'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new ApiError('PAYLOAD_TOO_LARGE'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => new ApiError('MALFORMED_JSON', { message: 'The request body does not match its Content-Length.' }),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => new ApiError('MALFORMED_JSON')
}

export function toApiError (error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error
  const code = (error as FastifyError | null)?.code
  if (typeof code === 'string' && code in FRAMEWORK_CODES) return FRAMEWORK_CODES[code]!()
  if (isDatabaseUnavailable(error)) {
    return serviceUnavailable({ cause: error })
  }
  // A client-side failure the framework detected (aborted upload, bad URL encoding, …).
  const status = (error as FastifyError | null)?.statusCode
  if (typeof status === 'number' && status === 400) return new ApiError('MALFORMED_JSON', { message: 'The request could not be read.' })
  return undefined
}

/**
 * Fastify's `frameworkErrors` option: failures its router meets before any hook or handler runs.
 * A path that is not valid percent-encoding (`/v1/users/%E0%A4%A`) or absurdly long cannot be
 * routed, so it is the client's bad request: 400 VALIDATION_ERROR on the field `path`.
 */
export function frameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_BAD_URL' || error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    const message = error.code === 'FST_ERR_BAD_URL' ? 'is not a valid percent-encoded URL path' : 'is too long'
    sendProblem(request, reply, validationError([{ field: 'path', message }]))
    return
  }
  request.log.error({ err: error }, 'framework error')
  sendProblem(request, reply, new ApiError('INTERNAL_SERVER_ERROR'))
}

/** The one error handler: known errors in the error body, anything else logged and a generic 500. */
export const errorHandler = fp(async (app) => {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    // Fastify's body reader gives up a body past the limit by removing its listeners, which
    // leaves the request flowing with no reader: the socket would go on being read and the bytes
    // dropped, uncounted, until the answer's lingering close takes over. Paused here, the rest
    // waits for the lingering close, which reads it within its bound (lingering-close.ts).
    if ((error as FastifyError | null)?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') request.raw.pause()
    const known = toApiError(error)
    if (known !== undefined) {
      // Its own message says what was unavailable (the database, an identity provider, the key for secrets at rest).
      if (known.code === 'SERVICE_UNAVAILABLE') request.log.warn({ err: error }, `service unavailable: ${known.message}`)
      return sendProblem(request, reply, known)
    }
    // The last fallback: log everything, tell the client nothing internal.
    request.log.error({ err: error }, 'unhandled error')
    return sendProblem(request, reply, new ApiError('INTERNAL_SERVER_ERROR'))
  })
}, { name: 'error-handler' })
