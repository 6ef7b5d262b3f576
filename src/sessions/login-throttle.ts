import type { Executor } from '../db/schema.js'
import { ApiError } from '../http/errors.js'

// Failed log-ins are counted in the database, per e-mail and per client address, over a sliding
// 15-minute window, so the limits hold across every instance behind a load balancer. Past a
// limit the answer is 429 whatever the password, until enough failures age out of the window.
//
// An attempt is recorded as a failure *before* the password is checked, and the record is taken
// back only if the password turns out right. Checking first and recording afterwards would let
// any number of simultaneous guesses through: each would count the failures before any of the
// others had been recorded (a password check takes tens of milliseconds).

export const WINDOW_SECONDS = 15 * 60

export interface ThrottleKeys { email: string, client: string }
export interface ThrottleLimits { perEmail: number, perClient: number }

interface ScopeState { scope: 'email' | 'client', key: string, limit: number, count: number }

async function countFailures (db: Executor, scope: 'email' | 'client', key: string, since: string): Promise<number> {
  const row = await db.selectFrom('login_failures').select((eb) => eb.fn.countAll().as('count'))
    .where('scope', '=', scope).where('key', '=', key).where('failed_at', '>', since)
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

/** Seconds until the count for this scope drops below its limit again. */
async function secondsUntilFree (db: Executor, state: ScopeState, since: string, now: number): Promise<number> {
  const row = await db.selectFrom('login_failures').select('failed_at')
    .where('scope', '=', state.scope).where('key', '=', state.key).where('failed_at', '>', since)
    .orderBy('failed_at', 'asc').offset(Math.max(0, state.count - state.limit)).limit(1)
    .executeTakeFirst()
  const freedAt = row === undefined ? now : new Date(row.failed_at).getTime() + WINDOW_SECONDS * 1000
  return Math.max(1, Math.ceil((freedAt - now) / 1000))
}

function rateLimitHeaders (states: ScopeState[], resetSeconds: number): Record<string, string> {
  const tightest = states.reduce((a, b) => (b.limit - b.count < a.limit - a.count ? b : a))
  const remaining = Math.max(0, tightest.limit - tightest.count)
  return {
    // draft-ietf-httpapi-ratelimit-headers: the policies in force and the one closest to its limit.
    'ratelimit-policy': states.map((s) => `"login-${s.scope}";q=${s.limit};w=${WINDOW_SECONDS}`).join(', '),
    ratelimit: `"login-${tightest.scope}";r=${remaining};t=${resetSeconds}`
  }
}

export interface LoginAttempt {
  /**
   * The password was right: the attempt is no failure, and the e-mail's count is cleared. Run it
   * in the transaction that acts on the log-in, so both happen or neither does.
   */
  succeeded: (trx: Executor) => Promise<void>
  /** The RateLimit header fields for the answer, counting this attempt when it failed. */
  headers: (failed: boolean) => Record<string, string>
}

/**
 * Starts a log-in attempt: records it as a failure, then throws 429 TOO_MANY_REQUESTS (taking
 * the record back) when either limit was already reached. Call `succeeded()` when the password
 * is right; a wrong one needs nothing more, it is already counted.
 */
export async function beginLoginAttempt (db: Executor, keys: ThrottleKeys, limits: ThrottleLimits, now = Date.now()): Promise<LoginAttempt> {
  const since = new Date(now - WINDOW_SECONDS * 1000).toISOString()
  const failedAt = new Date(now).toISOString()
  const own = await db.insertInto('login_failures').values([
    { scope: 'email', key: keys.email, failed_at: failedAt },
    { scope: 'client', key: keys.client, failed_at: failedAt }
  ]).returning('id').execute()
  const ownIds = own.map((r) => r.id)
  const takeBack = async (executor: Executor) => { await executor.deleteFrom('login_failures').where('id', 'in', ownIds).execute() }
  // Counts before this attempt (this attempt's own rows are in the window too).
  const states: ScopeState[] = [
    { scope: 'email', key: keys.email, limit: limits.perEmail, count: await countFailures(db, 'email', keys.email, since) - 1 },
    { scope: 'client', key: keys.client, limit: limits.perClient, count: await countFailures(db, 'client', keys.client, since) - 1 }
  ]
  const blocked = states.filter((s) => s.count >= s.limit)
  if (blocked.length > 0) {
    await takeBack(db)
    let retryAfter = 0
    for (const state of blocked) retryAfter = Math.max(retryAfter, await secondsUntilFree(db, state, since, now))
    throw new ApiError('TOO_MANY_REQUESTS', {
      message: 'Too many failed log-in attempts. Try again later.',
      headers: { 'retry-after': String(retryAfter), ...rateLimitHeaders(states, retryAfter) }
    })
  }
  await pruneOldFailures(db, since)
  return {
    succeeded: async (trx) => {
      // The e-mail's rows (this attempt's among them) all go; of the client's, only this attempt's.
      await clearEmailFailures(trx, keys.email)
      await takeBack(trx)
    },
    headers: (failed) => rateLimitHeaders(failed ? states.map((s) => ({ ...s, count: s.count + 1 })) : states, WINDOW_SECONDS)
  }
}

/**
 * Keeps the table small: failures older than the window no longer count for anything, for any
 * e-mail or address (one that never tries again included). Served by the failed_at index.
 */
async function pruneOldFailures (db: Executor, since: string): Promise<void> {
  await db.deleteFrom('login_failures').where('failed_at', '<=', since).execute()
}

/** A successful log-in clears the e-mail's count (not the client's: one address may try many e-mails). */
export async function clearEmailFailures (db: Executor, email: string): Promise<void> {
  await db.deleteFrom('login_failures').where('scope', '=', 'email').where('key', '=', email).execute()
}
