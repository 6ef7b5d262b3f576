import type { DialectName } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { recordHit, type Hit } from '../limits/sliding-window.js'

// Sign-ups per client address (SIGNUPS_PER_CLIENT_PER_HOUR) over a sliding hour, counted in the
// database (limits/sliding-window.ts) so the limit holds across instances, and under the
// address's lock, so that of simultaneous sign-ups exactly as many pass as the limit allows.
// What is counted is every sign-up that passed validation and reached the database, whether it
// created a user or found the e-mail taken (409): both cost a password hash, and counting the
// 409s too bounds how fast one address can find out which e-mails are registered. A refused
// attempt (429) is not counted: it cost nothing and taught nothing.

export const SIGNUP_WINDOW_SECONDS = 60 * 60

/**
 * Counts a sign-up attempt from `client`; throws 429 TOO_MANY_REQUESTS when the address already
 * used its sign-ups for the hour. Returns the RateLimit fields for the answer.
 */
export async function countSignup (db: Db, dialect: DialectName, client: string, limit: number): Promise<Record<string, string>> {
  const hit = await recordHit(db, dialect, 'signup', client, [{ name: 'signup', limit, seconds: SIGNUP_WINDOW_SECONDS }],
    'Too many sign-ups from this address. Try again later.')
  return hit.headers
}

/**
 * Counts, under the same per-client limit as sign-ups, a proposal of a new address for an
 * account (PUT /v1/users/{id}): one that finds the address taken (409) answers what a sign-up
 * would, so it is a way of finding out which addresses are registered, and is limited like one.
 * The caller takes the hit back when the address turned out free.
 */
export async function countAddressProbe (db: Db, dialect: DialectName, client: string, limit: number): Promise<Hit> {
  return await recordHit(db, dialect, 'signup', client, [{ name: 'signup', limit, seconds: SIGNUP_WINDOW_SECONDS }],
    'Too many taken addresses were tried from this address. Try again later.')
}
