import type { FastifyRequest } from 'fastify'

// Who made a change, as every event names it (docs/events.md): the user whose credential the
// request carried, and the API key when it was one; the service's own changes (an administrator
// made at start-up, an endpoint disabled after its failures) name no one. A person who proves
// an account by a mailed link, or signs up, acts as that account.

export interface Actor {
  userId: bigint | null
  apiKeyId: bigint | null
}

export const SERVICE_ACTOR: Actor = Object.freeze({ userId: null, apiKeyId: null })

/** The actor of an authenticated request (the service's own when it has no caller). */
export function actorOf (request: FastifyRequest): Actor {
  return { userId: request.user?.id ?? null, apiKeyId: request.apiKey?.id ?? null }
}

/** A person acting as the account `userId` without a credential yet (a sign-up, a mailed link). */
export function actingAs (userId: bigint): Actor {
  return { userId, apiKeyId: null }
}
