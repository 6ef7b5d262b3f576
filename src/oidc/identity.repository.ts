import type { Executor } from '../db/schema.js'
import type { IdentityRow } from './identity.table.js'

export async function findIdentity (db: Executor, provider: string, subject: string): Promise<IdentityRow | undefined> {
  return await db.selectFrom('user_identities').selectAll()
    .where('provider', '=', provider).where('subject', '=', subject)
    .executeTakeFirst()
}

export async function listIdentities (db: Executor, userId: bigint): Promise<IdentityRow[]> {
  return await db.selectFrom('user_identities').selectAll()
    .where('user_id', '=', userId).orderBy('linked_at').orderBy('id')
    .execute()
}

/** Links the subject to the account; a subject already linked (or a provider the account has) is a unique violation. */
export async function insertIdentity (trx: Executor, identity: { userId: bigint, provider: string, subject: string, email: string | null, now: string }): Promise<void> {
  await trx.insertInto('user_identities').values({
    user_id: identity.userId,
    provider: identity.provider,
    subject: identity.subject,
    email: identity.email,
    linked_at: identity.now
  }).execute()
}

/** The provider's current address for the subject, as shown in the account's identities. */
export async function updateIdentityEmail (trx: Executor, id: bigint, email: string | null): Promise<void> {
  await trx.updateTable('user_identities').set({ email }).where('id', '=', id).execute()
}

/** Unlinks the account from the provider; false when it was not linked. */
export async function deleteIdentity (trx: Executor, userId: bigint, provider: string): Promise<boolean> {
  const result = await trx.deleteFrom('user_identities').where('user_id', '=', userId).where('provider', '=', provider).executeTakeFirst()
  return result.numDeletedRows > 0n
}
