import type { Db } from '../db/schema.js'
import { write } from '../db/write.js'
import { setKeyLastUsed } from './credential.repository.js'

// `lastUsedAt` without a write per request: a key's use is written when the stored time is
// unset or a minute old, and each instance writes a key at most once a minute (uses between
// writes are the same minute's). A key's first use shows at once; later ones to the minute.

export const LAST_USED_RESOLUTION_MS = 60_000
/** Keys written lately, per database: key id → when. Entries older than the resolution are dropped as it grows. */
const written = new WeakMap<Db, Map<bigint, number>>()
const MAX_REMEMBERED = 10_000

export function keyUsed (db: Db, keyId: bigint, stored: Date | string | null): void {
  const now = Date.now()
  if (stored !== null && now - new Date(stored).getTime() < LAST_USED_RESOLUTION_MS) return
  let recent = written.get(db)
  if (recent === undefined) written.set(db, recent = new Map())
  const last = recent.get(keyId)
  if (last !== undefined && now - last < LAST_USED_RESOLUTION_MS) return
  if (recent.size >= MAX_REMEMBERED) for (const [id, at] of recent) if (now - at >= LAST_USED_RESOLUTION_MS) recent.delete(id)
  recent.set(keyId, now)
  // Not awaited: the request does not wait for it; a failed write is tried again by the next use.
  write(db, async (trx) => { await setKeyLastUsed(trx, keyId, new Date(now).toISOString()) }).catch(() => { recent.delete(keyId) })
}
