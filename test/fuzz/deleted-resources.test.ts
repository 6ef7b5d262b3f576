import sharp from 'sharp'
import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { createUser, tokenOf, type TestUser } from '../helper.js'
import { write } from '../../src/db/write.js'
import { FUZZ_PROVIDER, FuzzFailure, runs, SEED, startFuzzApp } from './fuzz-app.js'
import { World, type Who } from './fuzz-world.js'
import { documentedCodes, type Operation } from './openapi-operations.js'
import { materialize, validRequest } from './request-arbitrary.js'

// After a DELETE answers 204, every operation of the document on that resource (its path and
// the paths under it) answers 404 with the resource's own not-found code, whoever asks and
// whatever valid request they send; a deleted session answers 401 on every operation on it.
// The DELETE operations and their families come from the document.

const fuzz = await startFuzzApp()
after(fuzz.close)
const world = await World.create(fuzz)

// Turning the second factor off is not deleting a resource: afterwards a new enrolment is
// welcome (201) and the others answer TOTP_NOT_FOUND, as test/mfa/totp.test.ts asserts.
// Nor is removing an avatar: afterwards a new one is set with PUT (200). Nor is signing a user
// out everywhere: the account stays, and a log-in makes a new session
// (test/sessions/sign-out-everywhere.test.ts).
const SETTINGS = new Set(['DELETE /v1/users/{id}/totp', 'DELETE /v1/users/{id}/avatar', 'DELETE /v1/users/{id}/sessions'])
let doomed = 0
const deletes = fuzz.operations.filter((op) => op.method === 'DELETE' && op.responses['204'] !== undefined && !SETTINGS.has(op.key))
const familyOf = (del: Operation) => fuzz.operations.filter((op) => op.path === del.path || op.path.startsWith(`${del.path}/`))

interface Made {
  /** The `{id}` of the resource, when its path has one. */
  id: string | undefined
  /** Its path's other parameters. */
  path?: Record<string, string>
  /** Credentials of the one who may delete it. */
  owner: TestUser
  /** Who asks afterwards: the owner while the owner still exists, else another user. */
  asker: (op: Operation) => string | undefined
  /** Further checks once it is gone (what went with it). */
  gone?: () => Promise<void>
}

/** Makes a fresh resource for each DELETE of the document; an unknown one fails the test. */
async function make (del: Operation): Promise<Made> {
  const { app } = fuzz
  const auth = (who: Who) => world.users[who].auth.authorization
  switch (del.path) {
    case '/v1/posts/{id}': {
      const res = await app.inject({ method: 'POST', url: '/v1/posts', headers: world.users.alice.auth, payload: { title: 'doomed', content: 'soon gone' } })
      return { id: String(res.json().id), owner: world.users.alice, asker: () => auth('alice') }
    }
    case '/v1/users/{id}': {
      const user = await createUser(app, { name: 'doomed' })
      const post = await app.inject({ method: 'POST', url: '/v1/posts', headers: user.auth, payload: { title: 'mine', content: 'goes with me' } })
      const order = await app.inject({ method: 'POST', url: '/v1/orders', headers: user.auth, payload: { productId: Number(world.products.onSale), quantity: 1 } })
      return {
        id: String(user.id),
        owner: user,
        // The deleted user's own token died with it; another user asks.
        asker: () => auth('alice'),
        gone: async () => {
          const checks: Array<[string, Record<string, string>, number, string]> = [
            [`/v1/posts/${post.json().id}`, {}, 404, 'POST_NOT_FOUND'],
            [`/v1/orders/${order.json().id}`, world.users.admin.auth, 404, 'ORDER_NOT_FOUND'],
            ['/v1/sessions/current', user.auth, 401, 'AUTHENTICATION_REQUIRED']
          ]
          for (const [url, headers, status, code] of checks) {
            const res = await app.inject({ method: 'GET', url, headers })
            assert.equal(res.statusCode, status, `${url} after its user was deleted: ${res.body}`)
            assert.equal(res.json().code, code)
          }
        }
      }
    }
    case '/v1/webhook-endpoints/{id}': {
      const res = await app.inject({ method: 'POST', url: '/v1/webhook-endpoints', headers: world.users.alice.auth, payload: { url: 'http://127.0.0.1:9/doomed' } })
      const ping = await app.inject({ method: 'POST', url: `/v1/webhook-endpoints/${res.json().id}/ping`, headers: world.users.alice.auth })
      return {
        id: String(res.json().id),
        owner: world.users.alice,
        asker: () => auth('alice'),
        // Its delivery log went with it.
        gone: async () => {
          const read = await app.inject({ method: 'GET', url: `/v1/webhook-endpoints/${res.json().id}/deliveries/${ping.json().id}`, headers: world.users.admin.auth })
          assert.equal(read.statusCode, 404)
          assert.equal(read.json().code, 'WEBHOOK_ENDPOINT_NOT_FOUND')
        }
      }
    }
    case '/v1/api-keys/{id}': {
      const res = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: world.users.alice.auth, payload: { name: 'doomed', scopes: ['orders:read'] } })
      const key = res.json().key as string
      return {
        id: String(res.json().id),
        owner: world.users.alice,
        asker: () => auth('alice'),
        // The key itself stopped working.
        gone: async () => {
          const used = await app.inject({ method: 'GET', url: '/v1/orders', headers: { authorization: `Bearer ${key}` } })
          assert.equal(used.statusCode, 401)
          assert.equal(used.json().code, 'AUTHENTICATION_REQUIRED')
        }
      }
    }
    case '/v1/sessions/current': {
      const token = await tokenOf(app, world.users.bob.email, world.users.bob.password)
      return { id: undefined, owner: { ...world.users.bob, token, auth: { authorization: `Bearer ${token}` } }, asker: () => `Bearer ${token}` }
    }
    case '/v1/users/{id}/identities/{provider}': {
      // A link as a sign-in at the provider leaves it (test/oidc/ signs in for real); alice keeps
      // her password, so it is not her last way in.
      const alice = world.users.alice
      await write(app.db, async (trx) => {
        await trx.insertInto('user_identities').values({ user_id: BigInt(alice.id), provider: FUZZ_PROVIDER, subject: `doomed-${Date.now()}-${Math.random()}`, email: null, linked_at: new Date().toISOString() }).execute()
      })
      return { id: String(alice.id), path: { provider: FUZZ_PROVIDER }, owner: alice, asker: () => auth('alice') }
    }
    case '/v1/posts/{id}/images/{imageId}':
    case '/v1/products/{id}/images/{imageId}': {
      const onPost = del.path.startsWith('/v1/posts/')
      const owner = onPost ? world.users.alice : world.users.admin
      const ownerId = onPost ? world.posts.alice : world.products.onSale
      const picture = await sharp({ create: { width: 10, height: 10, channels: 3, background: { r: doomed++ % 256, g: 200, b: 9 } } }).png().toBuffer()
      const res = await app.inject({ method: 'POST', url: `/v1/${onPost ? 'posts' : 'products'}/${ownerId}/images`, headers: { ...owner.auth, 'content-type': 'image/png' }, payload: picture })
      assert.equal(res.statusCode, 201, res.body)
      const imageId = String(res.json().id)
      return {
        id: String(ownerId),
        path: { imageId },
        owner,
        asker: () => owner.auth.authorization,
        // Its address went with it.
        gone: async () => {
          const read = await app.inject({ method: 'GET', url: `/v1/files/${imageId}/thumb` })
          assert.equal(read.statusCode, 404)
          assert.equal(read.json().code, 'FILE_NOT_FOUND')
        }
      }
    }
    default: throw new Error(`no way to make the resource of ${del.key}: teach deleted-resources.test.ts`)
  }
}

/**
 * The answer every operation gives once the resource is gone: the deleted resource's own
 * not-found code (a sub-resource's operation also documents its own, which is not the one).
 */
function expected (op: Operation, del: Operation): { status: number, code: string } {
  if (!op.path.includes('{id}')) return { status: 401, code: 'AUTHENTICATION_REQUIRED' }
  // An identity is the resource, not the account that still exists around it; so is an image.
  if (del.path.endsWith('/identities/{provider}')) return { status: 404, code: 'IDENTITY_NOT_FOUND' }
  if (del.path.endsWith('/images/{imageId}')) return { status: 404, code: 'FILE_NOT_FOUND' }
  const own = new Set(documentedCodes(del, 404))
  const codes = documentedCodes(op, 404).filter((c) => c !== 'NOT_FOUND' && own.has(c))
  assert.equal(codes.length, 1, `${op.key} documents one not-found code for its resource: ${codes.join(', ')}`)
  return { status: 404, code: codes[0]! }
}

test('after a 204 DELETE, every operation on the resource is 404 (a deleted session: 401)', async (t) => {
  await fuzz.counted(t, async () => {
    assert.ok(deletes.length >= 3, `the document has ${deletes.length} DELETE operations`)
    for (const del of deletes) {
      const family = familyOf(del)
      await fc.assert(fc.asyncProperty(fc.tuple(...family.map((op) => validRequest(op))), async (requests) => {
        await world.ensure()
        const made = await make(del)
        const path = made.id === undefined ? {} : { id: made.id, ...made.path }
        const deletion = materialize(world, { key: del.key, path, query: {}, headers: {}, who: undefined, contentType: undefined, body: undefined })
        deletion.raw.headers.authorization = made.owner.auth.authorization
        const res = await fuzz.send(del, deletion.raw)
        if (res.statusCode !== 204) throw new FuzzFailure('the DELETE of a fresh resource by its owner was not 204', deletion.raw, res)
        await made.gone?.()
        for (const [i, op] of family.entries()) {
          const generated = requests[i]!
          const { raw } = materialize(world, { ...generated, path: { ...generated.path, ...path }, who: undefined })
          const authorization = made.asker(op)
          if (authorization !== undefined) raw.headers.authorization = authorization
          const answer = await fuzz.send(op, raw)
          const want = expected(op, del)
          if (answer.statusCode !== want.status || answer.json().code !== want.code) {
            throw new FuzzFailure(`after ${del.key} answered 204: expected ${want.status} ${want.code}`, raw, answer)
          }
        }
      }), { seed: SEED, numRuns: runs(del.path === '/v1/users/{id}' ? 3 : 6), endOnFailure: true })
    }
  })
})
