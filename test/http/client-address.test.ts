import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, uniqueEmail } from '../helper.js'

// Every per-client limit kept in the database (failed log-ins, sign-ups) counts a client the
// way the general rate limit does: its address in one canonical form, an IPv6 address by its
// /64. Behind a trusted proxy the address is what X-Forwarded-For says, spelled as the client
// likes: seven spellings of one address are one client, not seven.

const PROXY = '10.0.0.1'
const { app, close } = await buildTestApp({ TRUST_PROXY: PROXY, LOGIN_FAILURES_PER_CLIENT: '3', SIGNUPS_PER_CLIENT_PER_HOUR: '3' })
after(close)

const SPELLINGS = ['2001:db8::1', '2001:DB8::1', '2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8:0:0::1', '2001:db8::0:1', '2001:0DB8::0001', '2001:db8:0:0:0:0:0:1']

const logIn = async (client: string) => await app.inject({ method: 'POST', url: '/v1/sessions', remoteAddress: PROXY, headers: { 'x-forwarded-for': client }, payload: { email: uniqueEmail('nobody'), password: 'wrong password' } })
const signUp = async (client: string) => await app.inject({ method: 'POST', url: '/v1/users', remoteAddress: PROXY, headers: { 'x-forwarded-for': client }, payload: { email: uniqueEmail('signup'), password: 'correct horse battery', name: 'S' } })

describe('one client, however its address is written', { timeout: 60_000 }, () => {
  test('failed log-ins: three spellings of one address use up its limit; the others, and its /64, are refused', async () => {
    for (const spelling of SPELLINGS.slice(0, 3)) assertError(await logIn(spelling), 401, 'INVALID_CREDENTIALS')
    for (const spelling of [...SPELLINGS.slice(3), '2001:db8::ffff:1234']) assertError(await logIn(spelling), 429, 'TOO_MANY_REQUESTS')
    // Another /64 is another client.
    assertError(await logIn('2001:db8:0:1::1'), 401, 'INVALID_CREDENTIALS')
  })

  test('sign-ups: the same, for an IPv4-mapped address and the IPv4 address it is', async () => {
    for (const client of ['203.0.113.9', '::ffff:203.0.113.9', '::FFFF:203.0.113.9']) assert.equal((await signUp(client)).statusCode, 201)
    assertError(await signUp('203.0.113.9'), 429, 'TOO_MANY_REQUESTS')
    for (const spelling of SPELLINGS.slice(0, 3)) assert.equal((await signUp(spelling.replace('db8', 'db9').replace('DB8', 'DB9'))).statusCode, 201)
    assertError(await signUp('2001:db9:0:0:ffff::'), 429, 'TOO_MANY_REQUESTS')
  })
})
