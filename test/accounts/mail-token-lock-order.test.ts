import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { accountMail } from '../../src/accounts/account-mail.js'
import { issueToken } from '../../src/accounts/account-token.repository.js'
import { write } from '../../src/db/write.js'
import { insertUser } from '../../src/users/user.repository.js'
import { buildTestApp, dialect, type TestApp, uniqueEmail } from '../helper.js'

// An account mail that carries a token (a verification or a reset link) makes the token when it
// is sent, in a unit of its own. An account's deletion takes the account's row and then, by the
// cascade, its tokens. The mail's unit must take them in the same order, or each can hold what
// the other waits for: PostgreSQL found such a pair deadlocked and failed the deletion (a 500).
// Here the deletion's first step is held open (the row locked, as DELETE does) while the mail is
// made: the mail's unit must wait on the row before it touches any token of the account.

describe('a mail\'s token and the account\'s deletion take the account first', { skip: dialect !== 'postgres' ? 'row locks are PostgreSQL\'s (SQLite runs one writer at a time)' : false, timeout: 30_000 }, () => {
  let t: TestApp
  before(async () => { t = await buildTestApp() })
  after(async () => { await t.close() })

  for (const kind of ['verify-email', 'reset-password'] as const) {
    test(`${kind}: no token of the account is locked while its row is held; the mail is made once the row is free`, async () => {
      const email = uniqueEmail('lock-order')
      const user = await write(t.app.db, async (trx) => await insertUser(trx, { email, name: 'Lock Order', passwordHash: '!', role: 'USER', now: new Date().toISOString() }))
      await write(t.app.db, async (trx) => { await issueToken(trx, user.id, kind, email) })
      const holder = new pg.Client({ connectionString: t.config.databaseUrl })
      const prober = new pg.Client({ connectionString: t.config.databaseUrl })
      await holder.connect()
      await prober.connect()
      try {
        await holder.query('BEGIN')
        await holder.query('SELECT id FROM users WHERE id = $1 FOR UPDATE', [user.id.toString()])
        const compose = accountMail(t.app.db, t.config)
        const made = compose({ id: 1n, kind, user_id: user.id, address: email, data: '{}', message_id: '<x@test>', attempts: 0 } as never)
        let settled = false
        void made.then(() => { settled = true }, () => { settled = true })
        // Give the mail's unit time to take whatever it takes before it must wait.
        await new Promise((resolve) => setTimeout(resolve, 500))
        assert.equal(settled, false, 'the mail was made while the account\'s row was held')
        // The account's token is free: the deletion's cascade would find it so.
        await prober.query('BEGIN')
        const free = await prober.query('SELECT id FROM account_tokens WHERE user_id = $1 FOR UPDATE NOWAIT', [user.id.toString()])
          .then((r) => r.rowCount, (error: Error) => error.message)
        await prober.query('ROLLBACK')
        assert.equal(free, 1, 'a token of the account was locked by the mail\'s unit while it waited for the row')
        await holder.query('COMMIT')
        const mail = await made
        assert.ok(mail !== undefined && mail.to === email)
      } finally {
        await holder.end()
        await prober.end()
      }
    })
  }
})
