import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, uniqueEmail } from '../helper.js'

// POST /v1/users, docs/api.md, one field at a time: missing, wrong type, blank, too long,
// at the limit. Every failure names exactly the failed field.

const { app, close } = await buildTestApp()
after(close)

type Field = 'email' | 'password' | 'name'
const FIELDS: Field[] = ['email', 'password', 'name']
const valid = () => ({ email: uniqueEmail(), password: 'correct horse', name: 'Ada' })
const post = (payload: unknown) => app.inject({ method: 'POST', url: '/v1/users', payload: payload as object })
const withField = (field: Field, value: unknown) => ({ ...valid(), [field]: value })

describe('POST /v1/users field rules', () => {
  for (const field of FIELDS) {
    test(`${field}: missing`, async () => {
      const body: Record<string, unknown> = valid()
      delete body[field]
      assertError(await post(body), 400, 'VALIDATION_ERROR', [field])
    })

    test(`${field}: wrong types (no coercion)`, async () => {
      for (const value of [42, 0, 1.5, null, true, false, [], ['a@example.com'], {}, { value: 'x' }]) {
        const res = await post(withField(field, value))
        assertError(res, 400, 'VALIDATION_ERROR', [field])
        assert.equal(res.json().errors[0].message, 'must be a string', JSON.stringify(value))
      }
    })

    test(`${field}: blank and whitespace-only`, async () => {
      for (const value of ['', ' ', '         ', '\t\t\t\t\t\t\t\t', '\n\n\n\n\n\n\n\n', '\u00a0\u2003\u3000\u00a0\u2003\u3000\u00a0\u2003', ' \r\n\t \r\n\t ']) {
        assertError(await post(withField(field, value)), 400, 'VALIDATION_ERROR', [field])
      }
    })
  }

  test('email: more than 254 characters', async () => {
    const domain = '@example.com'
    const email = 'a'.repeat(255 - domain.length) + domain
    assert.equal(email.length, 255)
    const res = await post(withField('email', email))
    assertError(res, 400, 'VALIDATION_ERROR', ['email'])
    assert.equal(res.json().errors[0].message, 'must be at most 254 characters')
  })

  test('email: exactly 254 characters is accepted', async () => {
    const domain = `@${Date.now()}.example.com`
    const email = 'b'.repeat(254 - domain.length) + domain
    assert.equal(email.length, 254)
    const res = await post(withField('email', email))
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().email, email)
  })

  test('name: 21 code points is too long, 20 is fine (counted in code points)', async () => {
    assertError(await post(withField('name', 'n'.repeat(21))), 400, 'VALIDATION_ERROR', ['name'])
    assertError(await post(withField('name', '😀'.repeat(21))), 400, 'VALIDATION_ERROR', ['name'])
    const ascii = await post(withField('name', 'n'.repeat(20)))
    assert.equal(ascii.statusCode, 201, ascii.body)
    const emoji = await post(withField('name', '😀'.repeat(20)))
    assert.equal(emoji.statusCode, 201, emoji.body)
    assert.equal(emoji.json().name, '😀'.repeat(20))
    const read = await app.inject({ method: 'GET', url: `/v1/users/${emoji.json().id}` })
    assert.equal(read.json().name, '😀'.repeat(20))
  })

  test('name: a single character is fine', async () => {
    assert.equal((await post(withField('name', 'x'))).statusCode, 201)
  })

  test('password: 7 and 51 characters are refused; 8 and 50 are fine', async () => {
    const short = await post(withField('password', 'p'.repeat(7)))
    assertError(short, 400, 'VALIDATION_ERROR', ['password'])
    assert.equal(short.json().errors[0].message, 'must be at least 8 characters')
    const long = await post(withField('password', 'p'.repeat(51)))
    assertError(long, 400, 'VALIDATION_ERROR', ['password'])
    assert.equal(long.json().errors[0].message, 'must be at most 50 characters')
    for (const password of ['p'.repeat(8), 'p'.repeat(50)]) {
      const body = withField('password', password)
      assert.equal((await post(body)).statusCode, 201)
      const login = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: body.email, password } })
      assert.equal(login.statusCode, 201)
    }
  })

  test('password: lengths are code points (7 emoji are too short, 50 emoji are fine)', async () => {
    assertError(await post(withField('password', '🔑'.repeat(7))), 400, 'VALIDATION_ERROR', ['password'])
    assertError(await post(withField('password', '🔑'.repeat(51))), 400, 'VALIDATION_ERROR', ['password'])
    const body = withField('password', '🔑'.repeat(50))
    assert.equal((await post(body)).statusCode, 201)
    const login = await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: body.email, password: body.password } })
    assert.equal(login.statusCode, 201)
  })

  test('password: never trimmed (spaces around it are part of it)', async () => {
    const body = withField('password', '  pass word  ')
    assert.equal((await post(body)).statusCode, 201)
    const attempt = (password: string) => app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: body.email, password } })
    for (const wrong of ['pass word', '  pass word', 'pass word  ', ' pass word ']) {
      assertError(await attempt(wrong), 401, 'INVALID_CREDENTIALS')
    }
    assert.equal((await attempt('  pass word  ')).statusCode, 201)
  })

  test('password: 7 characters plus surrounding spaces counts the spaces', async () => {
    // 6 visible characters and two spaces: 8 characters, valid because nothing is trimmed.
    assert.equal((await post(withField('password', ' abcdef '))).statusCode, 201)
  })

  test('several bad fields are reported together', async () => {
    assertError(await post({ email: 'nope', password: 'short', name: '' }), 400, 'VALIDATION_ERROR', ['email', 'password', 'name'])
    assertError(await post({ email: 5, name: 'n'.repeat(21), role: 'ADMIN' }), 400, 'VALIDATION_ERROR', ['email', 'password', 'name', 'role'])
    assertError(await post({ password: null, extra: 1, another: 2 }), 400, 'VALIDATION_ERROR', ['email', 'password', 'name', 'extra', 'another'])
  })

  test('every field message is a readable string', async () => {
    const res = await post({ email: 'nope', password: 'short', name: '   ' })
    for (const e of res.json().errors) {
      assert.equal(typeof e.message, 'string')
      assert.ok(e.message.length > 0)
      assert.deepEqual(Object.keys(e).sort(), ['field', 'message'])
    }
  })
})
