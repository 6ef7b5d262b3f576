import { writeStatement } from '../db/compiled.js'
import type { Db } from '../db/schema.js'
import { ApiError } from '../http/errors.js'

// Sign-ups per client address (SIGNUPS_PER_CLIENT_PER_HOUR) over a sliding hour, counted in the
// database so the limit holds across instances. What is counted is every sign-up that passed
// validation and reached the database, whether it created a user or found the e-mail taken
// (409): both cost a password hash, and counting the 409s too bounds how fast one address can
// find out which e-mails are registered. A refused attempt (429) is not counted, as for the
// log-in limits: it cost nothing and taught nothing.
//
// As with log-ins, the attempt is recorded (and committed) first and counted afterwards, so a
// burst of simultaneous sign-ups cannot all pass a count taken before any of them was recorded.

export const SIGNUP_WINDOW_SECONDS = 60 * 60

function headers (limit: number, used: number, reset: number): Record<string, string> {
  return {
    'ratelimit-policy': `"signup";q=${limit};w=${SIGNUP_WINDOW_SECONDS}`,
    ratelimit: `"signup";r=${Math.max(0, limit - used)};t=${reset}`
  }
}

/**
 * Records a sign-up attempt from `client`; throws 429 TOO_MANY_REQUESTS (taking it back) when
 * the address already used its sign-ups for the hour. Returns the RateLimit fields for the answer.
 */
export async function countSignup (db: Db, client: string, limit: number, now = Date.now()): Promise<Record<string, string>> {
  const since = new Date(now - SIGNUP_WINDOW_SECONDS * 1000).toISOString()
  const own = (await writeStatement(db, db.insertInto('signup_attempts').values({ client, attempted_at: new Date(now).toISOString() })
    .returning('id').compile())).rows[0]!
  const attempts = db.selectFrom('signup_attempts').where('client', '=', client).where('attempted_at', '>', since)
  const { count } = await attempts.select((eb) => eb.fn.countAll().as('count')).executeTakeFirstOrThrow()
  const before = Number(count) - 1
  if (before >= limit) {
    await writeStatement(db, db.deleteFrom('signup_attempts').where('id', '=', own.id).compile())
    // Free again when the oldest attempt that keeps the count at the limit leaves the window.
    const oldest = await attempts.select('attempted_at').orderBy('attempted_at', 'asc').offset(before - limit).limit(1).executeTakeFirst()
    const freedAt = oldest === undefined ? now : new Date(oldest.attempted_at).getTime() + SIGNUP_WINDOW_SECONDS * 1000
    const retryAfter = Math.max(1, Math.ceil((freedAt - now) / 1000))
    throw new ApiError('TOO_MANY_REQUESTS', {
      message: 'Too many sign-ups from this address. Try again later.',
      headers: { 'retry-after': String(retryAfter), ...headers(limit, limit, retryAfter) }
    })
  }
  await writeStatement(db, db.deleteFrom('signup_attempts').where('attempted_at', '<=', since).compile())
  return headers(limit, before + 1, SIGNUP_WINDOW_SECONDS)
}
