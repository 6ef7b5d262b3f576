import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { assertError, buildTestApp, tokenOf, uniqueEmail } from '../helper.js'

// A taken address answered at PUT /v1/users/{id} (409 DUPLICATE_EMAIL) says what sign-up's 409
// says: that an account has it. So it counts against the same per-client limit as sign-ups
// (SIGNUPS_PER_CLIENT_PER_HOUR, 3 here), and PUT is no faster way to find out who is registered.

const { app, close } = await buildTestApp({ SIGNUPS_PER_CLIENT_PER_HOUR: '3' })
after(close)

let clients = 0
/** Signs up from an address of its own (so sign-ups do not spend the prober's limit) and logs in. */
async function account () {
  const email = uniqueEmail('probe')
  const remoteAddress = `10.8.0.${++clients}`
  const created = await app.inject({ method: 'POST', url: '/v1/users', remoteAddress, payload: { email, password: 'correct horse battery', name: 'P' } })
  assert.equal(created.statusCode, 201, created.body)
  return { id: created.json().id as number, email, auth: { authorization: `Bearer ${await tokenOf(app, email, 'correct horse battery')}` } }
}

test('taken addresses probed with PUT count like sign-ups: the fourth probe is 429, a free address takes nothing', { timeout: 60_000 }, async () => {
  const prober = await account()
  const taken = await Promise.all([account(), account(), account(), account()])
  const put = async (email: string) => await app.inject({ method: 'PUT', url: `/v1/users/${prober.id}`, remoteAddress: '10.9.9.9', headers: prober.auth, payload: { email, name: 'P' } })
  // A free address is a proposal, not a probe: it takes its count back.
  for (let i = 0; i < 4; i++) assert.equal((await put(uniqueEmail('free'))).statusCode, 200)
  for (const other of taken.slice(0, 3)) assertError(await put(other.email), 409, 'DUPLICATE_EMAIL')
  const refused = await put(taken[3]!.email)
  assertError(refused, 429, 'TOO_MANY_REQUESTS')
  assert.ok(Number(refused.headers['retry-after']) > 0)
  // Free addresses too, now: the answer no longer depends on whether the address is taken.
  assertError(await put(uniqueEmail('free')), 429, 'TOO_MANY_REQUESTS')
  // And sign-ups from that client address share the count.
  assertError(await app.inject({ method: 'POST', url: '/v1/users', remoteAddress: '10.9.9.9', payload: { email: uniqueEmail(), password: 'correct horse battery', name: 'S' } }), 429, 'TOO_MANY_REQUESTS')
})
