import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp } from '../helper.js'

// user.email is an HTML (WHATWG) "valid e-mail address":
// https://html.spec.whatwg.org/multipage/input.html#valid-e-mail-address
// That is deliberately stricter than RFC 5322 (no quoted local parts, no IP literals, ASCII
// only) and looser in places (no dot needed in the domain, dots anywhere in the local part).

const { app, close } = await buildTestApp()
after(close)

const post = (email: unknown) => app.inject({ method: 'POST', url: '/v1/users', payload: { email, password: 'correct horse', name: 'Mail' } })

const VALID = [
  'simple@example.com',
  'a@b',
  'x+tag@sub.example.co.uk',
  "o'brien@example.com",
  "!#$%&'*+/=?^_`{|}~-@example.com",
  '.leading.dot@example.com',
  'dots..inside@example.com',
  'digits@123.456',
  'hyphen@my-domain.example',
  'puny@xn--bcher-kva.example',
  `label63@${'d'.repeat(63)}.example`,
  'UPPER@EXAMPLE.ORG'
]

const INVALID = [
  'plainaddress',
  '@example.com',
  'local@',
  'two@@example.com',
  'a@b@example.com',
  'with space@example.com',
  'a@exa mple.com',
  ' lead@example.com',
  'trail@example.com ',
  'newline@example.com\n',
  'a@-example.com',
  'a@example-.com',
  'a@example..com',
  'a@.example.com',
  'a@example.com.',
  'a@exa_mple.com',
  'ü@example.com',
  'a@exämple.com',
  'a@例え.jp',
  '"quoted"@example.com',
  'a@[127.0.0.1]',
  'a(comment)@example.com',
  'a,b@example.com',
  'a;b@example.com',
  'a\\b@example.com',
  '<a@example.com>',
  'Name <a@example.com>',
  `label64@${'d'.repeat(64)}.example`
]

describe('POST /v1/users e-mail format', () => {
  for (const email of VALID) {
    test(`accepts ${JSON.stringify(email)}`, async () => {
      const res = await post(email)
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(res.json().email, email)
    })
  }

  for (const email of INVALID) {
    test(`refuses ${JSON.stringify(email)}`, async () => {
      const res = await post(email)
      assertError(res, 400, 'VALIDATION_ERROR', ['email'])
    })
  }

  test('the format message is readable and names no internals', async () => {
    const res = await post('plainaddress')
    assert.equal(res.json().errors[0].message, 'must be a valid e-mail address')
  })

  test('a refused e-mail stores nothing', async () => {
    const before = await app.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
    await post('plainaddress')
    await post('a@b@c')
    const afterwards = await app.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()
    assert.equal(Number(afterwards.n), Number(before.n))
  })
})
