import type { FastifyRequest } from 'fastify'

/** Whether the client asks for an event stream: `text/event-stream` among the media types it accepts (not `*\/*` alone). */
export function wantsStream (request: FastifyRequest): boolean {
  const accept = request.headers.accept
  if (typeof accept !== 'string' || !accept.includes('text/event-stream')) return false
  return accept.split(',').some((range) => {
    const [type, ...parameters] = range.split(';').map((part) => part.trim().toLowerCase())
    return type === 'text/event-stream' && !parameters.some((p) => /^q=0(\.0*)?$/.test(p))
  })
}
