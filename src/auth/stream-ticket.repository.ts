import { randomBytes } from 'node:crypto'
import { execute, precompiled } from '../db/compiled.js'
import type { Executor } from '../db/schema.js'
import { hashToken } from './token.js'

// Stream tickets (migrations 014, 015): `est_` and 256 random bits, good for opening the event
// streams of the user who asked for one, for TICKET_SECONDS, kept only as a hash, with the
// credential (session or API key) that made it.

export const TICKET_SECONDS = 5 * 60
const TICKET = /^est_[A-Za-z0-9_-]{43}$/

/** The credential a ticket was made with: a session (its token's hash) or an API key (its id). */
export type TicketCredential = { sessionTokenHash: string } | { apiKeyId: bigint }

/** A new ticket for the caller's credential: its text (shown once) and its expiry. */
export async function createTicket (trx: Executor, userId: bigint, credential: TicketCredential, now: Date): Promise<{ ticket: string, expiresAt: string }> {
  const ticket = `est_${randomBytes(32).toString('base64url')}`
  const nowText = now.toISOString()
  const expiresAt = new Date(now.getTime() + TICKET_SECONDS * 1000).toISOString()
  // The user's expired tickets go: the table stays the size of the tickets in use.
  await trx.deleteFrom('stream_tickets').where('user_id', '=', userId).where('expires_at', '<=', nowText).execute()
  await trx.insertInto('stream_tickets').values({ ticket_hash: hashToken(ticket), user_id: userId, session_token_hash: 'sessionTokenHash' in credential ? credential.sessionTokenHash : null, api_key_id: 'apiKeyId' in credential ? credential.apiKeyId : null, created_at: nowText, expires_at: expiresAt }).execute()
  return { ticket, expiresAt }
}

const liveTicket = precompiled((db: Executor, ticketHash: string, now: string) => db.selectFrom('stream_tickets')
  .select(['user_id', 'session_token_hash', 'api_key_id']).where('ticket_hash', '=', ticketHash).where('expires_at', '>', now))

/** The credential a live ticket was made with; undefined for a malformed, unknown or expired one. */
export async function ticketCredential (db: Executor, ticket: string, now: string): Promise<{ userId: bigint, credential: TicketCredential | undefined } | undefined> {
  if (!TICKET.test(ticket)) return undefined
  const row = (await execute(db, liveTicket(db, hashToken(ticket), now))).rows[0]
  if (row === undefined) return undefined
  const credential = row.session_token_hash !== null ? { sessionTokenHash: row.session_token_hash } : row.api_key_id !== null ? { apiKeyId: BigInt(row.api_key_id) } : undefined
  return { userId: BigInt(row.user_id), credential }
}
