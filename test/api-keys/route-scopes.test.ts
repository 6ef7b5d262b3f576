import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { SCOPES } from '../../src/auth/scopes.js'
import { assertError, buildTestApp, createAdmin, type TestApp, type TestUser } from '../helper.js'

// Every operation says what it needs in its own `security`, and authentication reads it from
// there: walking the OpenAPI document, a write is public only if it is one of those that
// must be (sign-up, log-in and beginning a provider's sign-in, a view, the mailed links), an operation a key may not call is one of the account's or an administrator's over accounts,
// and every operation that names a scope refuses a key without it (403 naming that scope),
// before anything else, whatever the path and body.

const PUBLIC_WRITES = ['POST /v1/email-verification-tokens', 'POST /v1/email-verifications', 'POST /v1/password-reset-tokens', 'POST /v1/password-resets', 'POST /v1/users', 'POST /v1/sessions', 'POST /v1/oidc-authorizations', 'POST /v1/posts/{id}/views']
const SESSION_ONLY = [
  'PUT /v1/users/{id}', 'DELETE /v1/users/{id}', 'PUT /v1/users/{id}/password',
  'GET /v1/sessions/current', 'DELETE /v1/sessions/current', 'POST /v1/sessions/current/reauthentication',
  'POST /v1/api-keys', 'GET /v1/api-keys', 'GET /v1/api-keys/{id}', 'DELETE /v1/api-keys/{id}',
  'GET /v1/users/{id}/identities', 'DELETE /v1/users/{id}/identities/{provider}',
  'POST /v1/users/{id}/totp', 'PUT /v1/users/{id}/totp', 'DELETE /v1/users/{id}/totp',
  'PUT /v1/users/{id}/avatar', 'DELETE /v1/users/{id}/avatar',
  'GET /v1/users', 'DELETE /v1/users/{id}/sessions', 'GET /v1/system'
]

interface Operation { key: string, method: string, path: string, security: Array<Record<string, string[]>> | undefined }

let t: TestApp
let admin: TestUser
let operations: Operation[]

before(async () => {
  t = await buildTestApp()
  admin = await createAdmin(t.app)
  const doc = t.app.swagger() as { paths: Record<string, Record<string, { security?: Operation['security'] }>> }
  operations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods)
    .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
    .map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, method: method.toUpperCase(), path, security: op.security })))
})
after(async () => { await t.close() })

const scopeOf = (op: Operation): string | undefined => op.security?.find((requirement) => 'apiKey' in requirement)?.apiKey?.[0]

test('every operation declares its security; public writes, and operations closed to keys, are the known ones', () => {
  assert.ok(operations.length > 40)
  for (const op of operations) assert.ok(Array.isArray(op.security), `${op.key} declares no security`)
  const publicWrites = operations.filter((op) => op.method !== 'GET' && op.security!.length === 0).map((op) => op.key)
  assert.deepEqual(publicWrites.sort(), [...PUBLIC_WRITES].sort())
  const sessionOnly = operations.filter((op) => op.security!.length > 0 && scopeOf(op) === undefined).map((op) => op.key)
  assert.deepEqual(sessionOnly.sort(), [...SESSION_ONLY].sort())
  for (const op of operations) {
    const scope = scopeOf(op)
    if (scope !== undefined) assert.ok((SCOPES as readonly string[]).includes(scope), `${op.key}: unknown scope ${scope}`)
  }
})

test('every operation that names a scope refuses a key without it, and every one closed to keys refuses a key with every scope: 403 before anything else', async () => {
  const keyWith = async (scopes: string[]): Promise<string> => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/api-keys', headers: admin.auth, payload: { name: 'walker', scopes } })
    assert.equal(res.statusCode, 201, res.body)
    return `Bearer ${res.json().key as string}`
  }
  const all = await keyWith([...SCOPES])
  const others = new Map<string, string>()
  for (const scope of SCOPES) others.set(scope, await keyWith(SCOPES.filter((s) => s !== scope)))
  let checked = 0
  for (const op of operations) {
    if (op.security!.length === 0) continue
    const scope = scopeOf(op)
    const url = op.path.replace(/\{\w+\}/g, '1')
    const res = await t.app.inject({ method: op.method as 'GET', url, headers: { authorization: scope === undefined ? all : others.get(scope)!, 'content-type': 'application/json' }, payload: op.method === 'GET' || op.method === 'DELETE' ? undefined : '{"bad": true}' })
    assertError(res, 403, 'INSUFFICIENT_SCOPE')
    const challenge = String(res.headers['www-authenticate'])
    if (scope === undefined) assert.doesNotMatch(challenge, /scope=/, op.key)
    else assert.match(challenge, new RegExp(`scope="${scope}"$`), op.key)
    checked += 1
  }
  assert.ok(checked > 30, `${checked} operations checked`)
})
