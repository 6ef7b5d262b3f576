import type { Config } from '../config/config.js'
import { writeStatement } from '../db/compiled.js'
import type { Db, Executor } from '../db/schema.js'
import { emailKey } from '../http/email.js'
import { ApiError } from '../http/errors.js'

// Failed log-ins are counted in the database (so the limits hold across every instance behind
// a load balancer), over a sliding 15-minute window, three ways:
//   - per e-mail from one client address ("login-email", LOGIN_FAILURES_PER_EMAIL): one guesser
//     at one account;
//   - per client address over all e-mails ("login-client", LOGIN_FAILURES_PER_CLIENT): one
//     address spraying many accounts;
//   - per e-mail over all addresses ("login-account", LOGIN_FAILURES_PER_ACCOUNT): many addresses
//     guessing at one account. This one never refuses an address the account logged in from in
//     the last 30 days, so a stranger who knows someone's e-mail cannot lock them out of the
//     places they log in from; it only slows a distributed guesser, and new places.
// Past a limit the answer is 429 whatever the password, until enough failures leave the window.
//
// An attempt is recorded (and committed) as a failure *before* the password is checked, and the
// record is taken back only if the password turns out right. Checking first and recording afterwards would let
// any number of simultaneous guesses through: each would count the failures before any of the
// others had been recorded (a password check takes tens of milliseconds).
//
// A refused attempt (429) is not counted: it checked no password, so it taught the client
// nothing, and counting it would only let a client make the table grow at the pace it sends.
// It also means a refused client is free again exactly when its own failures age out.

export const WINDOW_SECONDS = 15 * 60
/** How long a successful log-in makes its address known to the account. */
export const KNOWN_CLIENT_DAYS = 30

export interface ThrottleKeys {
  /** The e-mail as compared (emailKey). */
  email: string
  client: string
  /** The account with that e-mail, when there is one. */
  userId: bigint | undefined
}
export interface ThrottleLimits { perEmail: number, perClient: number, perAccount: number }

type ScopeName = 'email' | 'client' | 'account'
interface Filter { email?: string, client?: string }
interface ScopeState {
  name: ScopeName
  filter: Filter
  limit: number
  count: number
  /** Counted and reported, but not enforced (the account's limit at a known address). */
  exempt?: boolean
}

function failures (db: Executor, filter: Filter, since: string) {
  return db.selectFrom('login_failures')
    .$if(filter.email !== undefined, (qb) => qb.where('email', '=', filter.email!))
    .$if(filter.client !== undefined, (qb) => qb.where('client', '=', filter.client!))
    .where('failed_at', '>', since)
}

async function countFailures (db: Executor, filter: Filter, since: string): Promise<number> {
  const row = await failures(db, filter, since).select((eb) => eb.fn.countAll().as('count')).executeTakeFirstOrThrow()
  return Number(row.count)
}

/** Seconds until the count for this scope drops below its limit again. */
async function secondsUntilFree (db: Executor, state: ScopeState, since: string, now: number): Promise<number> {
  const row = await failures(db, state.filter, since).select('failed_at')
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
    'ratelimit-policy': states.map((s) => `"login-${s.name}";q=${s.limit};w=${WINDOW_SECONDS}`).join(', '),
    ratelimit: `"login-${tightest.name}";r=${remaining};t=${resetSeconds}`
  }
}

/** Whether the account logged in from this address in the last 30 days. */
async function isKnownClient (db: Executor, userId: bigint, client: string, now: number): Promise<boolean> {
  const since = new Date(now - KNOWN_CLIENT_DAYS * 86_400_000).toISOString()
  const row = await db.selectFrom('known_login_clients').select('client')
    .where('user_id', '=', userId).where('client', '=', client).where('last_login_at', '>', since)
    .executeTakeFirst()
  return row !== undefined
}

export interface LoginAttempt {
  /**
   * The password was right: the failures of this e-mail from this address are cleared (this
   * attempt's among them) and the address becomes known to the account. Run it in the
   * transaction that acts on the log-in, so both happen or neither does.
   */
  succeeded: (trx: Executor) => Promise<void>
  /**
   * The password was right but the log-in is not finished (a second factor is asked for): this
   * attempt is taken back, and nothing else; the failures so far stay, and the address does not
   * become known until the code is right too.
   */
  forgive: (trx: Executor) => Promise<void>
  /** The RateLimit header fields for the answer, counting this attempt when it failed. */
  headers: (failed: boolean) => Record<string, string>
}

/**
 * Starts a log-in attempt: records it as a failure, then throws 429 TOO_MANY_REQUESTS (taking
 * the record back) when a limit was already reached. Call `succeeded()` when the password is
 * right; a wrong one needs nothing more, it is already counted.
 */
export async function beginLoginAttempt (db: Db, keys: ThrottleKeys, limits: ThrottleLimits, now = Date.now()): Promise<LoginAttempt> {
  const since = new Date(now - WINDOW_SECONDS * 1000).toISOString()
  const at = new Date(now).toISOString()
  const own = (await writeStatement(db, db.insertInto('login_failures').values({ email: keys.email, client: keys.client, failed_at: at })
    .returning('id').compile())).rows[0]!
  const takeBack = db.deleteFrom('login_failures').where('id', '=', own.id).compile()
  // Asked for an unknown e-mail too (no user has id 0), so both take the same queries. The
  // answer's RateLimit fields are the same either way, so they reveal neither whether the e-mail
  // has an account nor whether this address is known to it.
  const known = await isKnownClient(db, keys.userId ?? 0n, keys.client, now)
  const scopes: Array<Omit<ScopeState, 'count'>> = [
    { name: 'email', filter: { email: keys.email, client: keys.client }, limit: limits.perEmail },
    { name: 'client', filter: { client: keys.client }, limit: limits.perClient },
    { name: 'account', filter: { email: keys.email }, limit: limits.perAccount, exempt: known }
  ]
  // Counts before this attempt (this attempt's own row is in the window too).
  const states: ScopeState[] = []
  for (const scope of scopes) states.push({ ...scope, count: await countFailures(db, scope.filter, since) - 1 })
  const blocked = states.filter((s) => s.count >= s.limit && s.exempt !== true)
  if (blocked.length > 0) {
    await writeStatement(db, takeBack)
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
      await trx.deleteFrom('login_failures').where('email', '=', keys.email).where('client', '=', keys.client).execute()
      if (keys.userId !== undefined) await rememberClient(trx, keys.userId, keys.client, at, now)
    },
    forgive: async (trx) => {
      await trx.deleteFrom('login_failures').where('id', '=', own.id).execute()
    },
    headers: (failed) => rateLimitHeaders(failed ? states.map((s) => ({ ...s, count: s.count + 1 })) : states, WINDOW_SECONDS)
  }
}

/** The limits as configured (LOGIN_FAILURES_PER_EMAIL, _PER_CLIENT, _PER_ACCOUNT). */
export function loginLimits (config: Config): ThrottleLimits {
  return { perEmail: config.loginFailuresPerEmail, perClient: config.loginFailuresPerClient, perAccount: config.loginFailuresPerAccount }
}

/**
 * An attempt to prove who one is (a password, a second-factor code), counted under the
 * configured limits against the address it names (`email`: as typed, or the account's; '' for
 * an attempt that names no account, which counts against the client alone).
 */
export async function beginSignInAttempt (db: Db, config: Config, attempt: { email: string, userId: bigint | undefined, client: string }): Promise<LoginAttempt> {
  return await beginLoginAttempt(db, { email: emailKey(attempt.email), client: attempt.client, userId: attempt.userId }, loginLimits(config))
}

async function rememberClient (trx: Executor, userId: bigint, client: string, at: string, now: number): Promise<void> {
  await trx.insertInto('known_login_clients').values({ user_id: userId, client, last_login_at: at })
    .onConflict((oc) => oc.columns(['user_id', 'client']).doUpdateSet({ last_login_at: at }))
    .execute()
  // The user's addresses that are no longer known go; the table stays the size of real use.
  const forgotten = new Date(now - KNOWN_CLIENT_DAYS * 86_400_000).toISOString()
  await trx.deleteFrom('known_login_clients').where('user_id', '=', userId).where('last_login_at', '<=', forgotten).execute()
}

/**
 * Keeps the table small: failures older than the window no longer count for anything, for any
 * e-mail or address (one that never tries again included). Served by the failed_at index.
 */
async function pruneOldFailures (db: Db, since: string): Promise<void> {
  await writeStatement(db, db.deleteFrom('login_failures').where('failed_at', '<=', since).compile())
}
