import { writeStatement } from '../db/compiled.js'
import type { Db, Executor } from '../db/schema.js'
import type { GeneratedId, Timestamp } from '../db/types.js'
import { ApiError } from './errors.js'

// Limits counted in the database over sliding windows, so they hold across every instance:
// hits of a scope (`mail-address`, `token-client`) by a key (an address, a client address).
// A hit is recorded (and committed) first and counted afterwards, so a burst of simultaneous
// requests cannot all pass a count taken before any of them was recorded; a hit refused by a
// limit is taken back (it did nothing, and counting it would let a client grow the table at the
// pace it sends). The caller may take a hit back later too (a token that turned out good is not
// a failure).

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
 * Records a hit and checks every window; past a limit the hit is taken back and the answer is
 * 429 TOO_MANY_REQUESTS with Retry-After (when the tightest refusing window frees a place).
 */
export async function recordHit (db: Db, scope: string, key: string, windows: readonly Window[], message: string, now = Date.now()): Promise<Hit> {
  const own = (await writeStatement(db, db.insertInto('limit_hits').values({ scope, key, at: new Date(now).toISOString() }).returning('id').compile())).rows[0]!
  const takeBack = async (executor: Executor): Promise<void> => { await executor.deleteFrom('limit_hits').where('id', '=', own.id).execute() }
  let retryAfter = 0
  const used: number[] = []
  for (const window of windows) {
    const since = new Date(now - window.seconds * 1000).toISOString()
    const { count } = await hitsOf(db, scope, key, since).select((eb) => eb.fn.countAll().as('count')).executeTakeFirstOrThrow()
    const before = Number(count) - 1
    used.push(before)
    if (before >= window.limit) {
      // Free again when the oldest hit that keeps the count at the limit leaves the window.
      const oldest = await hitsOf(db, scope, key, since).select('at').orderBy('at', 'asc').offset(before - window.limit).limit(1).executeTakeFirst()
      const freedAt = oldest === undefined ? now : new Date(oldest.at).getTime() + window.seconds * 1000
      retryAfter = Math.max(retryAfter, Math.ceil((freedAt - now) / 1000), 1)
    }
  }
  const policy = windows.map((w) => `"${w.name}";q=${w.limit};w=${w.seconds}`).join(', ')
  const tightest = (counted: number[]): string => {
    let best = 0
    for (let i = 1; i < windows.length; i++) if (windows[i]!.limit - counted[i]! < windows[best]!.limit - counted[best]!) best = i
    return `"${windows[best]!.name}";r=${Math.max(0, windows[best]!.limit - counted[best]!)}`
  }
  if (retryAfter > 0) {
    await writeStatement(db, db.deleteFrom('limit_hits').where('id', '=', own.id).compile())
    throw new ApiError('TOO_MANY_REQUESTS', { message, headers: { 'retry-after': String(retryAfter), 'ratelimit-policy': policy, ratelimit: `${tightest(used)};t=${retryAfter}` } })
  }
  // Hits older than the longest window count for nothing any more.
  const longest = Math.max(...windows.map((w) => w.seconds))
  await writeStatement(db, db.deleteFrom('limit_hits').where('scope', '=', scope).where('at', '<=', new Date(now - longest * 1000).toISOString()).compile())
  const counted = used.map((n) => n + 1)
  const reset = windows.reduce((t, w) => Math.max(t, w.seconds), 0)
  return { takeBack, headers: { 'ratelimit-policy': policy, ratelimit: `${tightest(counted)};t=${reset}` } }
}
