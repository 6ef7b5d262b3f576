import type { FastifyRequest } from 'fastify'
import { ApiError } from '../http/errors.js'
import { findSessionAuthenticatedAt } from './credential.repository.js'

// Recent authentication (docs/accounts.md): a session alone, however it was obtained (a stolen
// token, a borrowed laptop), must not be enough to take an account away from its owner for
// good. So the changes that would do that (a new e-mail address, a second factor turned on, a
// provider unlinked, an API key made, the account deleted) also need the session's holder to
// have proved who they are within REAUTHENTICATION_SECONDS: by logging in, or by
// POST /v1/sessions/current/reauthentication. These routes take log-in tokens only (an API key
// cannot re-authenticate), so the request's session is the one asked about. A webhook endpoint
// (a new one, or a new URL) is a lasting copy of the account's events, like a key: made with a
// session, it needs a recent one; made with a key that may manage endpoints, the key's own
// making was the proof.

export function reauthenticationRequired (): ApiError {
  return new ApiError('REAUTHENTICATION_REQUIRED')
}

/** 403 REAUTHENTICATION_REQUIRED unless the request's session proved its holder recently. */
export async function requireRecentAuthentication (request: FastifyRequest, now = Date.now()): Promise<void> {
  const tokenHash = request.sessionTokenHash
  const at = tokenHash === null ? undefined : await findSessionAuthenticatedAt(request.server.db, tokenHash)
  if (at === undefined || at === null) throw reauthenticationRequired()
  const since = now - new Date(at).getTime()
  if (since > request.server.config.reauthenticationSeconds * 1000) throw reauthenticationRequired()
}

/** For routes that take a session or an API key: a session must be recent; a key passes (see the top of this file). */
export async function requireRecentSession (request: FastifyRequest): Promise<void> {
  if (request.apiKey === null) await requireRecentAuthentication(request)
}
