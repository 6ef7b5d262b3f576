import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, uniqueEmail } from '../helper.js'

// The limits on mail: one mail per address a minute and five an hour, whoever asks and whether
// or not an account has the address; the answer past a limit is the same for both kinds of
// address. Sign-up's own mail goes to an address nobody has proven yet, so it counts too.

// The limits as shipped: one mail an address a minute, five an hour.
const { app, close } = await buildTestApp({ MAIL_PER_ADDRESS_PER_MINUTE: '1', MAIL_PER_ADDRESS_PER_HOUR: '5' })
after(close)

const ROUTES = ['/v1/password-reset-tokens', '/v1/email-verification-tokens']
const ask = async (url: string, email: string) => await app.inject({ method: 'POST', url, payload: { email } })
const pastHit = (scope: string, key: string, secondsAgo: number) => ({ scope, key, at: new Date(Date.now() - secondsAgo * 1000).toISOString() })

describe('limits on mail', { timeout: 60_000 }, () => {
  test('a second mail for one address within a minute is 429 with Retry-After, the same for a known and an unknown address, across both routes and any case', async () => {
    const known = uniqueEmail('limited')
    assert.equal((await app.inject({ method: 'POST', url: '/v1/users', payload: { email: known, password: 'correct horse battery', name: 'Lim' } })).statusCode, 201)
    const unknown = uniqueEmail('unlimited')
    const answers = []
    // The unknown address's first mail is asked for here; the known one's was sign-up's.
    assert.equal((await ask(ROUTES[0]!, unknown)).statusCode, 202)
    for (const email of [known, unknown]) {
      const second = await ask(ROUTES[1]!, email.toUpperCase())
      assertError(second, 429, 'TOO_MANY_REQUESTS')
      const retryAfter = Number(second.headers['retry-after'])
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, String(second.headers['retry-after']))
      const { requestId, ...rest } = second.json()
      answers.push({ status: second.statusCode, body: rest, policy: second.headers['ratelimit-policy'], retryAfter })
      assert.equal(typeof requestId, 'string')
    }
    assert.deepEqual(answers[0], answers[1])
  })

  test('five an hour: the sixth is 429 until the oldest leaves the hour', async () => {
    const email = uniqueEmail('hourly')
    // Five earlier mails this hour, each more than a minute ago.
    const { write } = await import('../../src/db/write.js')
    await write(app.db, async (trx) => { await trx.insertInto('limit_hits').values([50, 40, 30, 20, 10].map((m) => pastHit('mail-address', email, m * 60))).execute() })
    const res = await ask(ROUTES[0]!, email)
    assertError(res, 429, 'TOO_MANY_REQUESTS')
    // The oldest (50 minutes ago) leaves the hour in 10 minutes.
    const retryAfter = Number(res.headers['retry-after'])
    assert.ok(retryAfter > 9 * 60 && retryAfter <= 10 * 60, String(retryAfter))
  })

  test('a refused ask is not counted: an address free again after its minute asks once more', async () => {
    const email = uniqueEmail('again')
    const { write } = await import('../../src/db/write.js')
    await write(app.db, async (trx) => { await trx.insertInto('limit_hits').values([pastHit('mail-address', email, 61)]).execute() })
    assert.equal((await ask(ROUTES[1]!, email)).statusCode, 202)
    assertError(await ask(ROUTES[1]!, email), 429, 'TOO_MANY_REQUESTS')
    const counted = await app.db.selectFrom('limit_hits').select((eb) => eb.fn.countAll().as('n')).where('scope', '=', 'mail-address').where('key', '=', email).executeTakeFirstOrThrow()
    assert.equal(Number(counted.n), 2)
  })

  test('simultaneous asks for one address: exactly one 202', async () => {
    const email = uniqueEmail('burst')
    const answers = await Promise.all(Array.from({ length: 8 }, async (_, i) => await ask(ROUTES[i % 2]!, email)))
    const statuses = answers.map((r) => r.statusCode).sort()
    assert.deepEqual(statuses, [202, 429, 429, 429, 429, 429, 429, 429])
  })

  test('failed tokens: at most 20 a minute per client address, then 429 on both token routes', async () => {
    const junk = { token: 'A'.repeat(43) }
    for (let i = 0; i < 20; i++) {
      const url = i % 2 === 0 ? '/v1/email-verifications' : '/v1/password-resets'
      const payload = i % 2 === 0 ? junk : { ...junk, newPassword: 'battery staple horse' }
      assertError(await app.inject({ method: 'POST', url, payload, remoteAddress: '10.9.9.9' }), 400, 'INVALID_TOKEN')
    }
    const refused = await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: junk, remoteAddress: '10.9.9.9' })
    assertError(refused, 429, 'TOO_MANY_REQUESTS')
    assert.ok(Number(refused.headers['retry-after']) >= 1 && Number(refused.headers['retry-after']) <= 60)
    assertError(await app.inject({ method: 'POST', url: '/v1/password-resets', payload: { ...junk, newPassword: 'battery staple horse' }, remoteAddress: '10.9.9.9' }), 429, 'TOO_MANY_REQUESTS')
    // Another address is not affected.
    assertError(await app.inject({ method: 'POST', url: '/v1/email-verifications', payload: junk, remoteAddress: '10.9.9.8' }), 400, 'INVALID_TOKEN')
  })
})
