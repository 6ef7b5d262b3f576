import { randomUUID } from 'node:crypto'
import type { Db, Executor } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { afterCommit, handleOf } from '../db/write.js'
import type { MailKind, MailOutboxRow } from './mail.table.js'

// The mail outbox: a mail is a row written in the unit of work of the change that causes it, so
// it exists if and only if that change committed; the background sender (mail-sender.ts) sends
// it. Its Message-ID is fixed here, so a mail sent again after a crash is recognisably the same.

export interface QueuedMail {
  kind: MailKind
  /** The account the mail is about, when known now. */
  userId?: bigint
  /** Where it goes: the address as given (an account's, or one typed into a request). */
  address: string
  /** What the mail says beyond the account's row (never a secret). */
  data?: Record<string, string>
}

const listeners = new WeakMap<Db, Set<(kind: MailKind) => void>>()

/** Who wants to know, in-process, that mail was queued and committed: the sender of this database handle. */
export function onMailQueued (db: Db, listener: (kind: MailKind) => void): () => void {
  let set = listeners.get(db)
  if (set === undefined) listeners.set(db, set = new Set())
  set.add(listener)
  return () => { set.delete(listener) }
}

export async function queueMail (trx: Executor, mail: QueuedMail, domain: string): Promise<void> {
  const now = nowIso()
  await trx.insertInto('mail_outbox').values({
    kind: mail.kind,
    user_id: mail.userId ?? null,
    address: mail.address,
    data: JSON.stringify(mail.data ?? {}),
    message_id: `<${randomUUID()}@${domain}>`,
    status: 'PENDING',
    attempts: 0,
    next_attempt_at: now,
    created_at: now
  }).execute()
  const handle = handleOf(trx)
  if (handle !== undefined) afterCommit(trx, () => { for (const listener of listeners.get(handle) ?? []) listener(mail.kind) })
}

export type ClaimedMail = Pick<MailOutboxRow, 'id' | 'kind' | 'user_id' | 'address' | 'data' | 'message_id' | 'attempts'>

export async function finishMail (db: Executor, id: bigint, status: 'SENT' | 'SKIPPED' | 'FAILED', error: string | null): Promise<void> {
  await db.updateTable('mail_outbox').set({ status, completed_at: nowIso(), lease_until: null, last_error: error }).where('id', '=', id).execute()
}

export async function retryMail (db: Executor, id: bigint, at: Date, error: string): Promise<void> {
  await db.updateTable('mail_outbox').set({ next_attempt_at: at.toISOString(), lease_until: null, last_error: error }).where('id', '=', id).execute()
}

/** Finished mails older than the retention period go. */
export async function pruneMail (db: Executor, before: string): Promise<void> {
  await db.deleteFrom('mail_outbox').where('completed_at', '<=', before).execute()
}
