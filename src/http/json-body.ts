import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'

// The only body format is JSON (and, for PATCH, JSON merge patch). Anything else is 415.
// An empty body reads as "no body", which validation treats as an empty object, so the client
// hears which fields are required instead of a parse error.
export function registerJsonBody (app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(['application/json', 'application/merge-patch+json'], { parseAs: 'string' },
    (_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const text = typeof body === 'string' ? body : body.toString('utf8')
      if (text.trim() === '') { done(null, undefined); return }
      try {
        done(null, JSON.parse(text))
      } catch {
        // Also catches a RangeError from pathologically deep nesting: still the client's fault.
        done(new ApiError('MALFORMED_JSON'))
      }
    })
}
