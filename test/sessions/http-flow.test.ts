import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildTestApp, uniqueEmail } from '../helper.js'

// The whole account life over real HTTP (not inject): sign up, log in, read the session,
// rename, change the password, log out, delete.

const { url, close } = await buildTestApp()
after(close)

async function call (method: string, path: string, body?: unknown, token?: string): Promise<{ status: number, headers: Headers, text: string, json: () => any }> {
  const headers: Record<string, string> = {}
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  const res = await fetch(`${await url()}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, headers: res.headers, text, json: () => JSON.parse(text) }
}

function assertUnauthenticated (res: { status: number, json: () => any }): void {
  assert.equal(res.status, 401)
  assert.equal(res.json().code, 'AUTHENTICATION_REQUIRED')
}

describe('account life over HTTP', () => {
  test('sign up, log in, use, rename, re-key, log out, delete', async () => {
    const email = uniqueEmail('http')
    const created = await call('POST', '/v1/users', { email, password: 'correct horse', name: 'Wire' })
    assert.equal(created.status, 201)
    assert.match(created.headers.get('content-type') ?? '', /^application\/json/)
    const id = created.json().id as number
    assert.equal(created.headers.get('location'), `/v1/users/${id}`)

    const session = await call('POST', '/v1/sessions', { email, password: 'correct horse' })
    assert.equal(session.status, 201)
    const token = session.json().token as string
    const second = (await call('POST', '/v1/sessions', { email, password: 'correct horse' })).json().token as string

    const me = await call('GET', '/v1/sessions/current', undefined, token)
    assert.equal(me.status, 200)
    assert.equal(me.json().user.id, id)

    const renamed = await call('PUT', `/v1/users/${id}`, { email, name: 'Wired' }, token)
    assert.equal(renamed.status, 200)
    assert.deepEqual(renamed.json(), { id, email, name: 'Wired', emailVerified: false, pendingEmail: null })

    const rekeyed = await call('PUT', `/v1/users/${id}/password`, { currentPassword: 'correct horse', newPassword: 'battery staple' }, token)
    assert.equal(rekeyed.status, 204)
    assert.equal(rekeyed.text, '')
    assertUnauthenticated(await call('GET', '/v1/sessions/current', undefined, second))

    const out = await call('DELETE', '/v1/sessions/current', undefined, token)
    assert.equal(out.status, 204)
    const loggedOut = await call('GET', '/v1/sessions/current', undefined, token)
    assertUnauthenticated(loggedOut)
    assert.equal(loggedOut.json().requestId, loggedOut.headers.get('x-request-id'))

    const again = (await call('POST', '/v1/sessions', { email, password: 'battery staple' })).json().token as string
    assert.equal((await call('DELETE', `/v1/users/${id}`, undefined, again)).status, 204)
    assert.equal((await call('GET', `/v1/users/${id}`)).json().code, 'USER_NOT_FOUND')
    assertUnauthenticated(await call('GET', '/v1/sessions/current', undefined, again))
  })

  test('raw JSON with a NUL escape over the wire is a 400 naming the field', async () => {
    const res = await fetch(`${await url()}/v1/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"email":${JSON.stringify(uniqueEmail())},"password":"correct horse","name":"a\\u0000b"}`
    })
    assert.equal(res.status, 400)
    const body = await res.json() as { code: string, errors: Array<{ field: string }> }
    assert.equal(body.code, 'VALIDATION_ERROR')
    assert.deepEqual(body.errors.map((e) => e.field), ['name'])
  })
})
