import type { Config } from '../config/config.js'
import { dialectOfHandle } from '../db/database.js'
import type { Db, Executor } from '../db/schema.js'
import { write } from '../db/write.js'
import { emailKey } from '../http/email.js'
import type { ClaimedMail } from '../mail/mail.repository.js'
import type { Compose } from '../mail/mail-sender.js'
import { findUserByEmail, findUserById, lockUser } from '../users/user.repository.js'
import type { UserRow } from '../users/user.table.js'
import { accountLink } from './account-links.js'
import { issueToken, TOKEN_LIFETIME_MS } from './account-token.repository.js'

// What each account mail says, decided when it is sent (mail/mail-sender.ts): the account is
// looked up then, and a token is made then (voiding the account's earlier ones of its purpose).
// A mail asked for by address (a reset, a new verification mail) names no account when queued,
// so asking costs the same whether or not one has the address; an address no account has, or
// one that needs no proof any more, gets nothing.

/**
 * The account whose own address this is, not yet proven. An address only proposed by some
 * account (a pending change) is proven only by that account asking again (PUT /v1/users/{id}):
 * mailing its link to whoever asks by address would let a stranger's proposal be confirmed by
 * the address's owner pressing a link meant for their own account.
 */
async function awaitingProof (db: Executor, address: string): Promise<UserRow | undefined> {
  const own = await findUserByEmail(db, address)
  return own !== undefined && Number(own.email_verified) === 0 ? own : undefined
}

function data (mail: ClaimedMail): Record<string, string> {
  return JSON.parse(mail.data) as Record<string, string>
}

export function accountMail (db: Db, config: Config): Compose {
  const dialect = dialectOfHandle(db)
  /**
   * A token is made in a unit that holds the account's row first: the order in which an
   * account's deletion takes them (its row, then its tokens by the cascade), so that the two
   * never wait on each other (PostgreSQL found them deadlocked: the mail's unit held the account's
   * old token and waited on the row, the deletion held the row and waited on the token). The
   * decision is made on the row as it is then; an account gone meanwhile gets no mail.
   */
  const withAccount = async <T>(id: bigint, work: (trx: Executor, user: UserRow) => Promise<T | undefined>): Promise<T | undefined> =>
    await write(db, async (trx) => {
      const user = await lockUser(trx, dialect, id)
      return user === undefined ? undefined : await work(trx, user)
    })
  return async (mail) => {
    switch (mail.kind) {
      case 'verify-email': {
        const found = mail.user_id === null ? await awaitingProof(db, mail.address) : await findUserById(db, mail.user_id)
        if (found === undefined) return undefined
        return await withAccount(found.id, async (trx, user) => {
          const key = emailKey(mail.address)
          const pending = user.pending_email !== null && emailKey(user.pending_email) === key
          const current = emailKey(user.email) === key && Number(user.email_verified) === 0
          if (!pending && !current) return undefined
          const to = pending ? user.pending_email! : user.email
          const token = await issueToken(trx, user.id, 'verify-email', to)
          return { to, content: { kind: 'verify-email', name: user.name, link: accountLink(config, 'email-verification', token), hours: TOKEN_LIFETIME_MS['verify-email'] / 3_600_000, newAddress: pending } }
        })
      }
      case 'reset-password': {
        const found = mail.user_id === null ? await findUserByEmail(db, mail.address) : await findUserById(db, mail.user_id)
        if (found === undefined) return undefined
        return await withAccount(found.id, async (trx, user) => {
          const token = await issueToken(trx, user.id, 'reset-password', user.email)
          return { to: user.email, content: { kind: 'reset-password', name: user.name, link: accountLink(config, 'password-reset', token), minutes: TOKEN_LIFETIME_MS['reset-password'] / 60_000 } }
        })
      }
      case 'email-changed': {
        const { name = '', newEmail = '' } = data(mail)
        return { to: mail.address, content: { kind: 'email-changed', name, oldEmail: mail.address, newEmail } }
      }
      case 'password-changed': {
        const { name = '', how } = data(mail)
        return { to: mail.address, content: { kind: 'password-changed', name, how: how === 'reset' ? 'reset' : 'change' } }
      }
      case 'mfa-changed': {
        const { name = '', what, remaining = '0' } = data(mail)
        return { to: mail.address, content: { kind: 'mfa-changed', name, what: what === 'disabled' || what === 'enabled' || what === 'removed' ? what : 'recovery-code-used', remaining: Number(remaining) } }
      }
      case 'identity-linked': {
        const { name = '', provider = '' } = data(mail)
        return { to: mail.address, content: { kind: 'identity-linked', name, provider } }
      }
      case 'api-key-created': {
        const { name = '', keyName = '', scopes = '', prefix = '' } = data(mail)
        return { to: mail.address, content: { kind: 'api-key-created', name, keyName, scopes: scopes.split(' ').filter((s) => s !== ''), prefix } }
      }
    }
  }
}
