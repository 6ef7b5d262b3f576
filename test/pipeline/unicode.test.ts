import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createUser, dialect } from '../helper.js'

// Strings holding a NUL character or an unpaired surrogate fail their field (docs/api.md):
// the two databases would store them differently or refuse them. Valid Unicode is stored and
// returned exactly, on both databases.

const { app, close } = await buildTestApp()
after(close)
const me = await createUser(app)
const json = { 'content-type': 'application/json' }
const email = JSON.stringify(me.email)

const put = (payload: string) => app.inject({ method: 'PUT', url: `/v1/users/${me.id}`, headers: { ...me.auth, ...json }, payload })

describe(`ill-formed strings (${dialect})`, () => {
  // Raw JSON text: the escapes are decoded by the JSON parser, not by JavaScript here.
  const illFormed = ['"\\u0000"', '"a\\u0000"', '"\\ud800"', '"\\udc00x"', '"x\\udbff"', '"\\udc00\\ud800"', '"\\ud83d\\ud83d"']

  test('fail the field that holds them', async () => {
    for (const value of illFormed) {
      const res = await put(`{"email":${email},"name":${value}}`)
      assertError(res, 400, 'VALIDATION_ERROR', ['name'])
      assert.match(res.json().errors[0].message, /NUL|surrogate/)
    }
  })

  test('in several fields, each is named; other failures are reported with them', async () => {
    assertError(await put('{"email":"a\\u0000@example.com","name":"\\ud800"}'), 400, 'VALIDATION_ERROR', ['email', 'name'])
    assertError(await put('{"email":"\\udfff","name":"x","extra":1}'), 400, 'VALIDATION_ERROR', ['email', 'extra'])
  })

  test('in a log-in and a sign-up too', async () => {
    const login = await app.inject({ method: 'POST', url: '/v1/sessions', headers: json, payload: `{"email":${email},"password":"pass\\u0000word"}` })
    assertError(login, 400, 'VALIDATION_ERROR', ['password'])
    const signUp = await app.inject({ method: 'POST', url: '/v1/users', headers: json, payload: '{"email":"nul@example.com","password":"long\\ud800enough","name":"N\\u0000"}' })
    assertError(signUp, 400, 'VALIDATION_ERROR', ['password', 'name'])
  })

  test('nothing was stored', async () => {
    const read = await app.inject({ method: 'GET', url: `/v1/users/${me.id}` })
    assert.equal(read.json().name, me.name)
  })
})

describe(`valid Unicode is stored and returned exactly (${dialect})`, () => {
  const names = {
    emoji: '👩‍💻🧑🏽‍🚀🇫🇷',
    combining: 'e\u0301 n\u0303 a\u030A',
    precomposed: '\u00e9\u00f1\u00e5',
    rtl: '\u200Fשלום \u202Bمرحبا\u202C',
    astral: '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𐍈',
    zeroWidth: 'a\u200Bb\u200Dc\uFEFFd',
    cjk: '漢字かなカナ한국어',
    escapesOnly: '\u2028\u2029\u00A0x'
  }

  test('each kind survives PUT then GET unchanged, code unit for code unit', async () => {
    for (const [kind, name] of Object.entries(names)) {
      const res = await put(JSON.stringify({ email: me.email, name }))
      assert.equal(res.statusCode, 200, `${kind}: ${res.body}`)
      assert.equal(res.json().name, name, kind)
      const read = await app.inject({ method: 'GET', url: `/v1/users/${me.id}` })
      assert.equal(read.json().name, name, kind)
      assert.deepEqual(Buffer.from(read.json().name), Buffer.from(name), kind)
    }
  })

  test('precomposed and decomposed forms are kept apart (no normalisation)', async () => {
    await put(JSON.stringify({ email: me.email, name: 'Zo\u0065\u0301' }))
    assert.equal((await app.inject({ method: 'GET', url: `/v1/users/${me.id}` })).json().name, 'Zo\u0065\u0301')
    await put(JSON.stringify({ email: me.email, name: 'Zo\u00e9' }))
    assert.equal((await app.inject({ method: 'GET', url: `/v1/users/${me.id}` })).json().name, 'Zo\u00e9')
  })

  test('sent as \\u escapes (a surrogate pair) it is the same text', async () => {
    const res = await put(`{"email":${email},"name":"\\ud83d\\ude00 smile"}`)
    assert.equal(res.statusCode, 200, res.body)
    assert.equal(res.json().name, '😀 smile')
  })

  test('lengths count code points: 20 astral characters fit, 21 do not', async () => {
    const twenty = '😀'.repeat(20)
    assert.equal(twenty.length, 40) // 40 UTF-16 code units
    const res = await put(JSON.stringify({ email: me.email, name: twenty }))
    assert.equal(res.statusCode, 200, res.body)
    assert.equal((await app.inject({ method: 'GET', url: `/v1/users/${me.id}` })).json().name, twenty)
    assertError(await put(JSON.stringify({ email: me.email, name: '😀'.repeat(21) })), 400, 'VALIDATION_ERROR', ['name'])
  })
})
