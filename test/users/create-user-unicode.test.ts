import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, logIn, uniqueEmail } from '../helper.js'

// NUL characters and unpaired surrogates fail their field's rule; valid Unicode is stored and
// returned exactly; a body that is not a JSON object is a 400. Raw JSON text is sent, since
// JSON.stringify would never produce an unpaired surrogate escape on its own terms.

const { app, close } = await buildTestApp()
after(close)

const raw = (json: string) => app.inject({ method: 'POST', url: '/v1/users', headers: { 'content-type': 'application/json' }, payload: json })

/** A JSON text of a valid creation body with `member` replaced by the raw JSON string literal `literal`. */
function bodyWith (member: 'email' | 'password' | 'name', literal: string): string {
  const members: Record<string, string> = {
    email: JSON.stringify(uniqueEmail()),
    password: JSON.stringify('correct horse'),
    name: JSON.stringify('Uni')
  }
  members[member] = literal
  return `{${Object.entries(members).map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`
}

const BAD_LITERALS: Record<'email' | 'password' | 'name', string[]> = {
  email: ['"nul\\u0000@example.com"', '"a@example.com\\u0000"', '"\\ud800a@example.com"', '"a@example.com\\udc00"'],
  password: ['"correct\\u0000horse"', '"\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000\\u0000"', '"correct horse \\ud800"', '"\\udfffcorrect horse"', '"correct \\udc00\\ud800 horse"'],
  name: ['"A\\u0000B"', '"\\u0000"', '"A\\ud800B"', '"\\udbff"', '"\\ude00\\ud83d"']
}

describe('POST /v1/users: NUL and unpaired surrogates', () => {
  for (const [member, literals] of Object.entries(BAD_LITERALS) as Array<['email' | 'password' | 'name', string[]]>) {
    for (const literal of literals) {
      test(`${member} ${literal} is a 400 naming ${member}`, async () => {
        const res = await raw(bodyWith(member, literal))
        assertError(res, 400, 'VALIDATION_ERROR', [member])
      })
    }
  }

  test('a NUL in one field and a lone surrogate in another are reported together', async () => {
    const json = `{"email":"x\\u0000@example.com","password":"\\ud800 correct horse","name":"ok"}`
    assertError(await raw(json), 400, 'VALIDATION_ERROR', ['email', 'password'])
  })

  test('a properly paired surrogate escape is a valid character', async () => {
    const res = await raw(bodyWith('name', '"smile \\ud83d\\ude00"'))
    assert.equal(res.statusCode, 201, res.body)
    assert.equal(res.json().name, 'smile 😀')
  })

  test('a NUL member name is an unknown member, not a 500', async () => {
    const json = `{"email":${JSON.stringify(uniqueEmail())},"password":"correct horse","name":"ok","\\u0000":1}`
    assertError(await raw(json), 400, 'VALIDATION_ERROR', ['\u0000'])
  })
})

describe('POST /v1/users: valid Unicode round-trips exactly', () => {
  const names = [
    'e\u0301le\u0300ve', // combining accents
    '\u200fשלום\u200f', // right-to-left marks
    'Zoë Ångström',
    '👩‍👩‍👧‍👦 family', // ZWJ sequence: 7 code points + 7
    '\u202eevil',
    'tab\tinside',
    '名前'
  ]
  for (const name of names) {
    test(`name ${JSON.stringify(name)}`, async () => {
      const created = await app.inject({ method: 'POST', url: '/v1/users', payload: { email: uniqueEmail(), password: 'correct horse', name } })
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json().name, name)
      const read = await app.inject({ method: 'GET', url: `/v1/users/${created.json().id}` })
      assert.equal(read.json().name, name)
      const row = await app.db.selectFrom('users').select('name').where('id', '=', BigInt(created.json().id)).executeTakeFirstOrThrow()
      assert.equal(row.name, name)
    })
  }

  test('a non-ASCII password with combining marks logs in only in the same normalisation form', async () => {
    const email = uniqueEmail()
    const password = 'cafe\u0301 au lait' // decomposed é
    assert.equal((await app.inject({ method: 'POST', url: '/v1/users', payload: { email, password, name: 'Uni' } })).statusCode, 201)
    assert.equal((await logIn(app, { email, password })).statusCode, 201)
    assertError(await logIn(app, { email, password: password.normalize('NFC') }), 401, 'INVALID_CREDENTIALS')
  })
})

describe('POST /v1/users: bodies that are not a JSON object', () => {
  for (const json of ['null', '[]', '[{"email":"a@example.com"}]', '"text"', '42', 'true', '1e999999']) {
    test(`${json} is a 400 naming the body`, async () => {
      assertError(await raw(json), 400, 'VALIDATION_ERROR', ['body'])
    })
  }

  test('a deeply nested value is a 400, never a 500: on its field within 32 levels, on body beyond', async () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n)
    assertError(await raw(`{"email":${deep(31)},"password":"correct horse","name":"x"}`), 400, 'VALIDATION_ERROR', ['email'])
    assertError(await raw(`{"email":${deep(100_000)},"password":"correct horse","name":"x"}`), 400, 'VALIDATION_ERROR', ['body'])
  })

  test('a huge number is a 400 naming the field', async () => {
    assertError(await raw(bodyWith('name', '1e400')), 400, 'VALIDATION_ERROR', ['name'])
    assertError(await raw(bodyWith('email', '123456789012345678901234567890')), 400, 'VALIDATION_ERROR', ['email'])
  })

  test('malformed JSON is 400 MALFORMED_JSON', async () => {
    assertError(await raw('{"email": "a@example.com",'), 400, 'MALFORMED_JSON')
    assertError(await raw("{'email': 'a@example.com'}"), 400, 'MALFORMED_JSON')
  })

  test('a non-JSON content type is 415', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/users', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'email=a%40example.com&password=correct+horse&name=x' })
    assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
  })
})
