import { sql } from 'kysely'
import { Counter, type Registry } from 'prom-client'
import { claimDue, type ClaimSpec } from '../background/claims.js'
import { DeliveryLoop, type BackgroundLog } from '../background/delivery-loop.js'
import { nextAttemptAt } from '../background/retry.js'
import type { MailConfig } from '../config/config.js'
import type { DialectName } from '../db/database.js'
import type { Db } from '../db/schema.js'
import { write } from '../db/write.js'
import { LONGEST_WINDOW_SECONDS, pruneHits } from '../limits/sliding-window.js'
import { finishMail, onMailQueued, pruneMail, retryMail, type ClaimedMail } from './mail.repository.js'
import type { MailKind } from './mail.table.js'
import { renderMail, type MailContent } from './templates.js'
import { mailTransport, type MailTransport } from './transport.js'

// The background sender of the mail outbox, in every instance, on the loop every background
// delivery shares (background/delivery-loop.ts): claimed with a lease (one instance of several
// sends each mail; a dead instance's claim runs out and the mail is sent by another, at least
// once), retried on the MAIL_RETRY_SCHEDULE (about 24 hours), then failed. A mail is composed
// when it is sent (`compose`, given by the accounts): the account is looked up then, and a token
// is made then, so no token waits in the outbox in clear, and a mail that no longer has a reason
// (the address was verified meanwhile, no account has it) is skipped. The request that queued
// the mail never waits for any of this: an SMTP server that is down or slow only delays mail.

/** A mail as the accounts compose it, or undefined: nothing to send. */
export type Compose = (mail: ClaimedMail) => Promise<{ to: string, content: MailContent } | undefined>


export interface MailSenderOptions {
  db: Db
  dialect: DialectName
  config: MailConfig
  /** The service's name in mails: the host people reach it at. */
  site: string
  log: BackgroundLog
  compose: Compose
  registry?: Registry
  /** Replaces the transport the configuration names (the benchmark counts its own). */
  transport?: MailTransport
}

/** Mails sent at once by one instance (the SMTP pool's connections). */
const MAX_IN_FLIGHT = 4
/** A claimed mail is another instance's to send once this long has passed (beyond SMTP's own time limits). */
const LEASE_MS = 90_000
const PRUNE_EVERY_MS = 60 * 60 * 1000
/** Sent, skipped and failed mails are kept this long (for an operator's questions), then deleted. */
const KEEP_FINISHED_MS = 7 * 24 * 60 * 60 * 1000

const OUTBOX: ClaimSpec = {
  table: 'mail_outbox',
  from: sql`mail_outbox d`,
  returning: sql`id, kind, user_id, address, data, message_id, attempts`
}

/** The first line of an error, without the SMTP server's echo of anything longer. */
function reason (error: unknown): string {
  const text = error instanceof Error ? `${(error as { code?: string }).code ?? error.name}: ${error.message}` : String(error)
  return text.split('\n')[0]!.slice(0, 300)
}

// Every kind of mail (the type's every member, or this does not compile), so that each counter
// shows each kind from the start, at 0: a series that appears only with its first failure cannot
// be alerted on, since a rate needs a sample from before it.
const MAIL_KINDS = Object.keys({
  'verify-email': true, 'reset-password': true, 'email-changed': true, 'password-changed': true, 'mfa-changed': true,
  'identity-linked': true, 'api-key-created': true
} satisfies Record<MailKind, true>) as MailKind[]

export class MailSender {
  readonly #db: Db
  readonly #options: MailSenderOptions
  readonly #transport: MailTransport
  readonly #loop: DeliveryLoop<ClaimedMail>
  readonly #counters: { queued: Counter, sent: Counter, skipped: Counter, failed: Counter, errors: Counter } | undefined
  #lastPrune = 0

  constructor (options: MailSenderOptions) {
    this.#db = options.db
    this.#options = options
    this.#transport = options.transport ?? mailTransport(options.config)
    const registers = options.registry === undefined ? undefined : [options.registry]
    if (registers !== undefined) {
      const counter = (name: string, help: string) => new Counter({ name, help, labelNames: ['kind'], registers })
      this.#counters = {
        queued: counter('mail_queued_total', 'Mails queued by this instance (committed with the change that causes them).'),
        sent: counter('mail_sent_total', 'Mails this instance handed to the SMTP server (or wrote as .eml files).'),
        skipped: counter('mail_skipped_total', 'Queued mails with nothing to send once it was time (no account has the address, or it needs no proof any more).'),
        failed: counter('mail_failed_total', 'Mails given up after the last retry.'),
        errors: counter('mail_send_errors_total', 'Attempts that failed (each is retried until the last).')
      }
      for (const counted of Object.values(this.#counters)) for (const kind of MAIL_KINDS) counted.inc({ kind }, 0)
    }
    this.#loop = new DeliveryLoop<ClaimedMail>({
      name: 'mail',
      log: options.log,
      pollMs: options.config.pollMs,
      maxInFlight: MAX_IN_FLIGHT,
      round: async () => { await this.#prune() },
      claim: async (free) => await this.#claim(free),
      send: async (mail) => { await this.#send(mail) },
      // A mail queued by this instance is counted and starts a round at once.
      wakeOn: (wake) => onMailQueued(options.db, (kind) => {
        this.#counters?.queued.inc({ kind })
        wake()
      })
    })
    // A stopping instance that waited its grace cuts the SMTP connections: the mails in flight
    // fail, are recorded for a retry, and another instance (or this one restarted) sends them.
    this.#loop.signal.addEventListener('abort', () => { this.#transport.close() })
  }

  async #claim (free: number): Promise<ClaimedMail[]> {
    const rows = await claimDue<ClaimedMail>(this.#db, this.#options.dialect, OUTBOX, free, new Date(), LEASE_MS)
    return rows.map((row) => ({ ...row, id: BigInt(row.id), user_id: row.user_id === null ? null : BigInt(row.user_id), attempts: BigInt(row.attempts) }))
  }

  start (): void {
    this.#loop.start()
  }

  async #send (mail: ClaimedMail): Promise<void> {
    const kind: MailKind = mail.kind
    let composed: Awaited<ReturnType<Compose>>
    try {
      composed = await this.#options.compose(mail)
    } catch (error) {
      await this.#failed(mail, error)
      return
    }
    if (composed === undefined) {
      await write(this.#db, async (trx) => { await finishMail(trx, mail.id, 'SKIPPED', null) })
      this.#counters?.skipped.inc({ kind })
      return
    }
    const rendered = renderMail(composed.content, this.#options.site)
    let where: string
    try {
      where = await this.#transport.send({ to: composed.to, ...rendered, messageId: mail.message_id })
    } catch (error) {
      await this.#failed(mail, error)
      return
    }
    await write(this.#db, async (trx) => { await finishMail(trx, mail.id, 'SENT', null) })
    this.#counters?.sent.inc({ kind })
    // The path of a .eml file (never its content: it may hold a token), or the server's answer.
    this.#options.log.info({ mailId: mail.id.toString(), kind, ...(this.#options.config.smtpUrl === undefined ? { path: where } : { response: where.slice(0, 200) }) }, 'mail sent')
  }

  async #failed (mail: ClaimedMail, error: unknown): Promise<void> {
    const kind: MailKind = mail.kind
    const why = reason(error)
    this.#counters?.errors.inc({ kind })
    const next = nextAttemptAt(this.#options.config.retryScheduleMs, Number(mail.attempts), new Date())
    await write(this.#db, async (trx) => {
      if (next === undefined) await finishMail(trx, mail.id, 'FAILED', why)
      else await retryMail(trx, mail.id, next, why)
    })
    if (next === undefined) this.#counters?.failed.inc({ kind })
    this.#options.log.warn({ mailId: mail.id.toString(), kind, attempts: Number(mail.attempts), error: why, retryAt: next?.toISOString() }, next === undefined ? 'mail failed: given up' : 'mail not sent: retried later')
  }

  async #prune (): Promise<void> {
    if (Date.now() - this.#lastPrune < PRUNE_EVERY_MS) return
    this.#lastPrune = Date.now()
    const now = new Date()
    const finishedBefore = new Date(now.getTime() - KEEP_FINISHED_MS).toISOString()
    // A look first: nearly every hour of a quiet instance has nothing to delete, and a start-up
    // should not add a write to the database for nothing.
    const db = this.#db
    const stale = await db.selectFrom('mail_outbox').select('id').where('completed_at', '<=', finishedBefore).limit(1).executeTakeFirst() ??
      await db.selectFrom('account_tokens').select('id').where('expires_at', '<=', now.toISOString()).limit(1).executeTakeFirst() ??
      await db.selectFrom('limit_hits').select('id').where('at', '<=', new Date(now.getTime() - LONGEST_WINDOW_SECONDS * 1000).toISOString()).limit(1).executeTakeFirst()
    if (stale === undefined) return
    await write(db, async (trx) => {
      await pruneMail(trx, finishedBefore)
      await trx.deleteFrom('account_tokens').where('expires_at', '<=', now.toISOString()).execute()
      await pruneHits(trx, now.getTime())
    })
  }

  async stop (): Promise<void> {
    await this.#loop.stop()
    this.#transport.close()
  }
}
