import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, logIn } from '../helper.js'

// The e-mail given at log-in is compared as sign-up compares it: ASCII letters case-insensitively,
// nothing else folded. toLowerCase() would turn the Kelvin sign (U+212A) into "k", so
// "\u212Aate@example.com", an address sign-up refuses, logged in as kate@example.com.

const { app, close } = await buildTestApp()
after(close)

describe('exact e-mail at log-in', () => {
  test('the Kelvin sign does not log in as "k"; sign-up refuses that address too', async () => {
    const kate = await createUser(app, { email: 'kate@example.com' })
    assertError(await logIn(app, { email: '\u212Aate@example.com', password: kate.password }), 401, 'INVALID_CREDENTIALS')
    assertError(await app.inject({ method: 'POST', url: '/v1/users', payload: { email: '\u212Aate@example.com', name: 'K', password: 'long enough' } }), 400, 'VALIDATION_ERROR', ['email'])
  })

  test('other characters that fold into ASCII do not match either', async () => {
    const user = await createUser(app, { email: 'sis@example.com' })
    // U+0130 (I with dot above) lower-cases to "i" plus a combining dot; U+017F (long s) upper-cases to "S".
    for (const email of ['s\u0130s@example.com', '\u017Fis@example.com', 'sis@example.\u212Aom']) {
      assertError(await logIn(app, { email: email, password: user.password }), 401, 'INVALID_CREDENTIALS')
    }
  })

  test('ASCII case still does not matter', async () => {
    const user = await createUser(app, { email: 'Mixed.Case@Example.com' })
    const res = await logIn(app, { email: 'mixed.case@EXAMPLE.COM', password: user.password })
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().user.email, 'Mixed.Case@Example.com')
  })
})
