import { sql } from 'kysely'
import type { DialectName } from '../db/database.js'
import { write } from '../db/write.js'
import type { Db, Executor } from '../db/schema.js'
import { ApiError } from '../http/errors.js'

// Limits counted in the database over sliding windows, so they hold across every instance:
// hits of a scope (`mail-address`, `token-client`) by a key (an address, a client address).
// A hit is counted and recorded in one unit of work that holds the key's lock (PostgreSQL: a
// transaction-level advisory lock on the scope and key; SQLite: the database's one writer), so
// of simultaneous requests exactly as many pass as the limit allows: the others count the ones
// before them. A refused hit is not recorded (it did nothing, and counting it would let a
// client grow the table at the pace it sends). The caller may take a hit back later (a token
// that turned out good is not a failure). Hits older than the longest window are deleted by the
// mail sender's hourly pruning, not by each request.


export interface Window {
  /** The policy's name in the RateLimit fields. */
  name: string
  limit: number
  seconds: number
}

export interface Hit {
  /** Takes the hit back (in the unit of work that acts on its success). */
  takeBack: (executor: Executor) => Promise<void>
  /** The RateLimit header fields for the answer. */
  headers: Record<string, string>
}

const hitsOf = (db: Executor, scope: string, key: string, since: string) =>
  db.selectFrom('limit_hits').where('scope', '=', scope).where('key', '=', key).where('at', '>', since)

/**
 * Holds the lock of a scope's key until the unit of work ends (PostgreSQL: a transaction-level
 * advisory lock, taken again freely by the same transaction; SQLite: the unit already holds the
 * database's one writer).
 */
export async function lockHitKey (trx: Executor, dialect: DialectName, scope: string, key: string): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${scope}), hashtext(${key}))`.execute(trx)
}

export type HitCount =
  | { refused: true, error: ApiError }
  | { refused: false, hit: Hit }

/**
 * Counts a hit against every window and records it, in the caller's unit of work (which holds
 * the key's lock until it commits); past a limit nothing is recorded and the count says so,
 * with the 429 TOO_MANY_REQUESTS (Retry-After: when the tightest refusing window frees a place)
 * for the caller to throw once the unit is over.
 *
 * The hit's time is read once the key is locked, not when the request asked: of simultaneous
 * requests the one that asked first may get the lock last, and counted at its earlier time it
 * would come before hits already recorded (a window's oldest hit younger than the request:
 * Retry-After past the window's own length).
 */
export async function countHit (trx: Executor, dialect: DialectName, scope: string, key: string, windows: readonly Window[], message: string): Promise<HitCount> {
  const policy = windows.map((w) => `"${w.name}";q=${w.limit};w=${w.seconds}`).join(', ')
  const tightest = (counted: number[]): string => {
    let best = 0
    for (let i = 1; i < windows.length; i++) if (windows[i]!.limit - counted[i]! < windows[best]!.limit - counted[best]!) best = i
    return `"${windows[best]!.name}";r=${Math.max(0, windows[best]!.limit - counted[best]!)}`
  }
  const longest = Math.max(...windows.map((w) => w.seconds))
  await lockHitKey(trx, dialect, scope, key)
  const now = Date.now()
  // Every window's count in one statement: the hits since the earliest window's start, each
  // counted for the windows it falls in.
  const sinces = windows.map((w) => new Date(now - w.seconds * 1000).toISOString())
  const earliest = sinces.reduce((a, b) => (a < b ? a : b))
  const counts = await hitsOf(trx, scope, key, earliest)
    .select((eb) => sinces.map((since, i) => eb.fn.count(eb.case().when('at', '>', since).then(1).end()).as(`w${i}`)))
    .executeTakeFirstOrThrow() as Record<string, unknown>
  const used = windows.map((_, i) => Number(counts[`w${i}`]))
  let retryAfter = 0
  for (const [i, window] of windows.entries()) {
    const before = used[i]!
    if (before >= window.limit) {
      // Free again when the oldest hit that keeps the count at the limit leaves the window.
      const oldest = await hitsOf(trx, scope, key, sinces[i]!).select('at').orderBy('at', 'asc').offset(before - window.limit).limit(1).executeTakeFirst()
      const freedAt = oldest === undefined ? now : new Date(oldest.at).getTime() + window.seconds * 1000
      retryAfter = Math.max(retryAfter, Math.ceil((freedAt - now) / 1000), 1)
    }
  }
  if (retryAfter > 0) {
    return { refused: true, error: new ApiError('TOO_MANY_REQUESTS', { message, headers: { 'retry-after': String(retryAfter), 'ratelimit-policy': policy, ratelimit: `${tightest(used)};t=${retryAfter}` } }) }
  }
  const own = await trx.insertInto('limit_hits').values({ scope, key, at: new Date(now).toISOString() }).returning('id').executeTakeFirstOrThrow()
  return {
    refused: false,
    hit: {
      takeBack: async (executor) => { await executor.deleteFrom('limit_hits').where('id', '=', own.id).execute() },
      headers: { 'ratelimit-policy': policy, ratelimit: `${tightest(used.map((n) => n + 1))};t=${longest}` }
    }
  }
}

/** The longest window of any limit here (an hour): a hit older than that counts for nothing. */
export const LONGEST_WINDOW_SECONDS = 3600

/** Deletes the hits no window counts any more (the mail sender's hourly pruning does it). */
export async function pruneHits (executor: Executor, now = Date.now()): Promise<void> {
  await executor.deleteFrom('limit_hits').where('at', '<=', new Date(now - LONGEST_WINDOW_SECONDS * 1000).toISOString()).execute()
}

/** Counts and records a hit in a unit of work of its own; throws the 429 past a limit. */
export async function recordHit (db: Db, dialect: DialectName, scope: string, key: string, windows: readonly Window[], message: string): Promise<Hit> {
  const counted = await write(db, async (trx) => await countHit(trx, dialect, scope, key, windows, message))
  if (counted.refused) throw counted.error
  return counted.hit
}
