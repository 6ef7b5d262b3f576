import type { Executor } from '../db/schema.js'
import type { Actor } from '../events/actor.js'
import { nowIso } from '../db/types.js'
import { recordEvent } from '../events/event.repository.js'
import { toUserAccount } from '../users/user.representation.js'
import type { UserRow } from '../users/user.table.js'

export interface AccountChanges {
  email?: string
  email_verified?: number
  pending_email?: string | null
  password_hash?: string
  role?: 'USER' | 'ADMIN'
}

/** Sets the account's fields and records the change as the user's (user.updated) when its representation changed. */
export async function updateAccount (trx: Executor, user: UserRow, set: AccountChanges, actor: Actor): Promise<UserRow> {
  const changed = await trx.updateTable('users').set({ ...set, updated_at: nowIso() }).where('id', '=', user.id).returningAll().executeTakeFirstOrThrow()
  const shown = toUserAccount(changed)
  const before = toUserAccount(user)
  if (shown.email !== before.email || shown.emailVerified !== before.emailVerified || shown.pendingEmail !== before.pendingEmail) {
    await recordEvent(trx, { type: 'user.updated', resourceId: user.id, audience: user.id, data: shown, actor })
  }
  return changed
}
