import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, uniqueEmail } from '../helper.js'

const { app, url, close } = await buildTestApp()
after(close)

const valid = () => ({ email: uniqueEmail(), password: 'correct horse', name: 'Ada' })
const post = (payload: unknown) => app.inject({ method: 'POST', url: '/v1/users', payload: payload as object })

describe('POST /v1/users', () => {
  test('creates a user: 201, Location, exactly {id, email, name}', async () => {
    const body = valid()
    const res = await post(body)
    assert.equal(res.statusCode, 201)
    const user = res.json()
    assert.deepEqual(Object.keys(user).sort(), ['email', 'id', 'name'])
    assert.equal(user.email, body.email)
    assert.equal(res.headers.location, `/v1/users/${user.id}`)
    const read = await app.inject({ method: 'GET', url: res.headers.location as string })
    assert.deepEqual(read.json(), { id: user.id, name: 'Ada' })
  })

  test('no body at all names every required field', async () => {
    assertError(await app.inject({ method: 'POST', url: '/v1/users' }), 400, 'VALIDATION_ERROR', ['email', 'password', 'name'])
  })

  test('20 simultaneous creations with one e-mail over real HTTP: exactly one 201', async () => {
    const base = await url()
    const email = uniqueEmail('race')
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(`${base}/v1/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: i % 2 === 0 ? email : email.toUpperCase(), password: 'correct horse', name: 'Racer' })
    })))
    const statuses = results.map((r) => r.status).sort()
    assert.equal(statuses.filter((s) => s === 201).length, 1)
    assert.equal(statuses.filter((s) => s === 409).length, 19)
    for (const r of results.filter((r) => r.status === 409)) assert.equal(((await r.json()) as { code: string }).code, 'DUPLICATE_EMAIL')
  })
})
