import { sql } from 'kysely'
import type { DialectName } from '../db/database.js'
import { write } from '../db/write.js'
import type { Db, Executor } from '../db/schema.js'
import type { GeneratedId, Timestamp } from '../db/types.js'
import { ApiError } from './errors.js'

// Limits counted in the database over sliding windows, so they hold across every instance:
// hits of a scope (`mail-address`, `token-client`) by a key (an address, a client address).
// A hit is counted and recorded in one unit of work that holds the key's lock (PostgreSQL: a
// transaction-level advisory lock on the scope and key; SQLite: the database's one writer), so
// of simultaneous requests exactly as many pass as the limit allows: the others count the ones
// before them. A refused hit is not recorded (it did nothing, and counting it would let a
// client grow the table at the pace it sends). The caller may take a hit back later (a token
// that turned out good is not a failure).

export interface LimitHitTable {
  id: GeneratedId
  scope: string
  key: string
  at: Timestamp
}

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
 * Counts a hit against every window and records it; past a limit nothing is recorded and the
 * answer is 429 TOO_MANY_REQUESTS with Retry-After (when the tightest refusing window frees a place).
 */
export async function recordHit (db: Db, dialect: DialectName, scope: string, key: string, windows: readonly Window[], message: string, now = Date.now()): Promise<Hit> {
  const policy = windows.map((w) => `"${w.name}";q=${w.limit};w=${w.seconds}`).join(', ')
  const tightest = (counted: number[]): string => {
    let best = 0
    for (let i = 1; i < windows.length; i++) if (windows[i]!.limit - counted[i]! < windows[best]!.limit - counted[best]!) best = i
    return `"${windows[best]!.name}";r=${Math.max(0, windows[best]!.limit - counted[best]!)}`
  }
  const longest = Math.max(...windows.map((w) => w.seconds))
  const outcome = await write(db, async (trx) => {
    if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${scope}), hashtext(${key}))`.execute(trx)
    let retryAfter = 0
    const used: number[] = []
    for (const window of windows) {
      const since = new Date(now - window.seconds * 1000).toISOString()
      const { count } = await hitsOf(trx, scope, key, since).select((eb) => eb.fn.countAll().as('count')).executeTakeFirstOrThrow()
      const before = Number(count)
      used.push(before)
      if (before >= window.limit) {
        // Free again when the oldest hit that keeps the count at the limit leaves the window.
        const oldest = await hitsOf(trx, scope, key, since).select('at').orderBy('at', 'asc').offset(before - window.limit).limit(1).executeTakeFirst()
        const freedAt = oldest === undefined ? now : new Date(oldest.at).getTime() + window.seconds * 1000
        retryAfter = Math.max(retryAfter, Math.ceil((freedAt - now) / 1000), 1)
      }
    }
    if (retryAfter > 0) return { refused: true as const, retryAfter, used }
    const own = await trx.insertInto('limit_hits').values({ scope, key, at: new Date(now).toISOString() }).returning('id').executeTakeFirstOrThrow()
    // The key's hits older than the longest window count for nothing any more.
    await trx.deleteFrom('limit_hits').where('scope', '=', scope).where('key', '=', key).where('at', '<=', new Date(now - longest * 1000).toISOString()).execute()
    return { refused: false as const, id: own.id, used }
  })
  if (outcome.refused) {
    throw new ApiError('TOO_MANY_REQUESTS', { message, headers: { 'retry-after': String(outcome.retryAfter), 'ratelimit-policy': policy, ratelimit: `${tightest(outcome.used)};t=${outcome.retryAfter}` } })
  }
  const { id } = outcome
  return {
    takeBack: async (executor) => { await executor.deleteFrom('limit_hits').where('id', '=', id).execute() },
    headers: { 'ratelimit-policy': policy, ratelimit: `${tightest(outcome.used.map((n) => n + 1))};t=${longest}` }
  }
}
