import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

// A client's own X-Request-Id is kept when it is sane (1 to 128 printable ASCII characters),
// so that a request can be followed across systems; otherwise one is made. Every answer carries
// it back (request-hooks.ts), equal to the `requestId` of an error body.
const SANE = /^[\x20-\x7e]{1,128}$/

export function genReqId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && SANE.test(given) ? given : randomUUID()
}
