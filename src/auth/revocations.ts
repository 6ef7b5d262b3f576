import type { Db } from '../db/schema.js'

// Who must know, in-process, that a credential stopped being good: the event streams opened with
// it end at once here (on other instances they notice at their next check of the credential).
// Announced after the commit that revoked it: a log-out, a password change (every other session
// of the user; API keys stay), an account deleted (every credential), an API key revoked.

export type Revocation =
  | { sessionTokenHash: string }
  | { userId: bigint, keepSessionTokenHash?: string }
  | { apiKeyId: bigint }

const listeners = new WeakMap<Db, Set<(revocation: Revocation) => void>>()

export function onCredentialsRevoked (db: Db, listener: (revocation: Revocation) => void): () => void {
  let set = listeners.get(db)
  if (set === undefined) listeners.set(db, set = new Set())
  set.add(listener)
  return () => { set.delete(listener) }
}

export function credentialsRevoked (db: Db, revocation: Revocation): void {
  for (const listener of listeners.get(db) ?? []) listener(revocation)
}
