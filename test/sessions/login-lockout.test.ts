import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, describe, test } from 'node:test'
import { buildTestApp, uniqueEmail } from '../helper.js'
import { write } from '../../src/db/write.js'

// The lock-out attack, replayed over real HTTP from distinct loopback source addresses (all of
// 127.0.0.0/8 is local): an attacker who knows someone's e-mail used to be able to lock them out
// everywhere with ten wrong passwords per 15 minutes. Now the limits are per (e-mail, address),
// per address and per account, and the per-account one never refuses an address the account
// logged in from in the last 30 days.

const { app, url, close } = await buildTestApp({ LOGIN_FAILURES_PER_EMAIL: '3', LOGIN_FAILURES_PER_CLIENT: '100', LOGIN_FAILURES_PER_ACCOUNT: '5' })
after(close)
const base = await url()

interface Answer { status: number, headers: Record<string, string | string[] | undefined>, body: any }

/** POSTs JSON to the app from the given local (source) address. */
async function post (path: string, body: unknown, from: string): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'POST', localAddress: from, headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }))
    })
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}
const logIn = (email: string, password: string, from: string) => post('/v1/sessions', { email, password }, from)

function assertRefused (res: Answer, policy: string): void {
  assert.equal(res.status, 429, JSON.stringify(res.body))
  assert.equal(res.body.code, 'TOO_MANY_REQUESTS')
  assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/)
  assert.match(String(res.headers.ratelimit), new RegExp(`^"login-${policy}";r=0;t=[1-9][0-9]*$`))
  assert.match(String(res.headers['ratelimit-policy']), new RegExp(`"login-${policy}";q=\\d+;w=900`))
}

/** A wrong password: 401 INVALID_CREDENTIALS, not yet refused. */
function assertWrongPassword (res: Answer): void {
  assert.equal(res.status, 401, JSON.stringify(res.body))
  assert.equal(res.body.code, 'INVALID_CREDENTIALS')
}

async function victim (from: string): Promise<{ email: string, password: string }> {
  const email = uniqueEmail('victim')
  const password = 'victim password 1'
  assert.equal((await post('/v1/users', { email, password, name: 'Victim' }, from)).status, 201)
  assert.equal((await logIn(email, password, from)).status, 201, 'the victim logs in from their usual address')
  return { email, password }
}

describe('a stranger cannot lock an account out of the places it logs in from', () => {
  test('the attacker locks (e-mail, address) and the account; the victim at a known address still logs in; a new address is refused', async () => {
    const { email, password } = await victim('127.0.0.3')
    // The attacker from 127.0.0.2: three wrong guesses, then refused there, whatever the password.
    for (let i = 0; i < 3; i++) assertWrongPassword(await logIn(email, `guess ${i}`, '127.0.0.2'))
    assertRefused(await logIn(email, password, '127.0.0.2'), 'email')
    // Two more guesses from another address reach the account limit (5 in 15 minutes).
    for (let i = 0; i < 2; i++) assertWrongPassword(await logIn(email, `guess ${i}`, '127.0.0.4'))
    // A new address is refused by the account limit, even with the right password ...
    assertRefused(await logIn(email, password, '127.0.0.5'), 'account')
    // ... but the victim's own address is not.
    const own = await logIn(email, password, '127.0.0.3')
    assert.equal(own.status, 201, JSON.stringify(own.body))
    assert.equal(own.body.user.email, email)
    // The fields are those of any address (they must not reveal that this one is known).
    assert.match(String(own.headers['ratelimit-policy']), /"login-account";q=5;w=900/)
  })

  test('refused attempts are not counted: the attacker cannot keep the account limit up by being refused', async () => {
    const { email } = await victim('127.0.0.6')
    for (let i = 0; i < 5; i++) assertWrongPassword(await logIn(email, `guess ${i}`, `127.0.1.${i + 1}`))
    const rows = async () => (await app.db.selectFrom('login_failures').select('id').where('email', '=', email).execute()).length
    assert.equal(await rows(), 5)
    for (let i = 0; i < 5; i++) assertRefused(await logIn(email, 'more', `127.0.2.${i + 1}`), 'account')
    assert.equal(await rows(), 5)
  })

  test('an address is known for 30 days after its last successful log-in', async () => {
    const { email, password } = await victim('127.0.0.7')
    for (let i = 0; i < 5; i++) assertWrongPassword(await logIn(email, `guess ${i}`, `127.0.3.${i + 1}`))
    assert.equal((await logIn(email, password, '127.0.0.7')).status, 201)
    const user = await app.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow()
    await write(app.db, async (trx) => await trx.updateTable('known_login_clients').set({ last_login_at: new Date(Date.now() - 31 * 86_400_000).toISOString() })
      .where('user_id', '=', user.id).execute())
    assertRefused(await logIn(email, password, '127.0.0.7'), 'account')
  })

  test('an unknown e-mail has no known address: the account limit applies from everywhere', async () => {
    const ghost = uniqueEmail('ghost')
    for (let i = 0; i < 5; i++) assertWrongPassword(await logIn(ghost, 'wrong password', `127.0.4.${i + 1}`))
    assertRefused(await logIn(ghost, 'wrong password', '127.0.4.9'), 'account')
  })
})
