import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { FuzzFailure, runs, SEED, startFuzzApp } from './fuzz-app.js'
import { Slot, World, type Author, type Who } from './fuzz-world.js'
import type { Operation } from './openapi-operations.js'
import { materialize, validRequest } from './request-arbitrary.js'
import { firstDifference, storedState } from './stored-state.js'

// A resource of one user is never read or written by another where the rules make it
// owner-only: every protected operation on it, in both directions (alice's by bob, bob's by
// alice) and by the admin where the admin has no say. The refusal is the one the rules name and
// nothing stored changes. The operations come from the document; a protected operation on these
// resources without a rule below fails the test, so a new one cannot slip past.

const fuzz = await startFuzzApp()
after(fuzz.close)
const world = await World.create(fuzz)

interface Rule {
  /** The slot kind of the owned resource in the path. */
  kind: 'postId' | 'userId' | 'orderId'
  /** The refusal a caller who is not the owner gets. */
  refusal: { status: number, code: string }
  /** Whether the admin is allowed (then only the other user is tested). */
  adminAllowed: boolean
}

// Posts: only the author writes, its images included (admins included in the refusal). Users: only the user changes
// or deletes the account, its avatar, its password, its identity providers, its second factor, or lists its
// orders (the admin may list the orders, remove the second factor and end the sessions).
// Orders: only the owner or an admin; someone else's order is 404 ORDER_NOT_FOUND, as if it did
// not exist (a 403 would tell that the id exists, and ids are sequential).
const RULES: Record<string, Rule> = {
  'PUT /v1/posts/{id}': { kind: 'postId', refusal: { status: 403, code: 'FORBIDDEN_POST_ACCESS' }, adminAllowed: false },
  'PATCH /v1/posts/{id}': { kind: 'postId', refusal: { status: 403, code: 'FORBIDDEN_POST_ACCESS' }, adminAllowed: false },
  'DELETE /v1/posts/{id}': { kind: 'postId', refusal: { status: 403, code: 'FORBIDDEN_POST_ACCESS' }, adminAllowed: false },
  'POST /v1/posts/{id}/images': { kind: 'postId', refusal: { status: 403, code: 'FORBIDDEN_POST_ACCESS' }, adminAllowed: false },
  'DELETE /v1/posts/{id}/images/{imageId}': { kind: 'postId', refusal: { status: 403, code: 'FORBIDDEN_POST_ACCESS' }, adminAllowed: false },
  'PUT /v1/users/{id}/avatar': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: false },
  'DELETE /v1/users/{id}/avatar': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: false },
  'PUT /v1/users/{id}': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: false },
  'DELETE /v1/users/{id}': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: false },
  'PUT /v1/users/{id}/password': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: false },
  'GET /v1/users/{id}/identities': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: true },
  'DELETE /v1/users/{id}/identities/{provider}': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: false },
  'POST /v1/users/{id}/totp': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: false },
  'PUT /v1/users/{id}/totp': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: false },
  'DELETE /v1/users/{id}/totp': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: true },
  'DELETE /v1/users/{id}/sessions': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: true },
  'GET /v1/users/{id}/orders': { kind: 'userId', refusal: { status: 403, code: 'ACCESS_DENIED' }, adminAllowed: true },
  'GET /v1/orders/{id}': { kind: 'orderId', refusal: { status: 404, code: 'ORDER_NOT_FOUND' }, adminAllowed: true },
  'PATCH /v1/orders/{id}': { kind: 'orderId', refusal: { status: 404, code: 'ORDER_NOT_FOUND' }, adminAllowed: true }
}

/** Protected operations addressing one user's post, account or order by `{id}`. */
const owned = fuzz.operations.filter((op) => op.secured && /^\/v1\/(posts|users|orders)\/\{id\}/.test(op.path))

test('every protected operation on a post, an account or an order has an ownership rule', () => {
  assert.deepEqual(owned.map((op) => op.key).sort(), Object.keys(RULES).sort())
})

function strangers (rule: Rule): Array<[Author, Who]> {
  const pairs: Array<[Author, Who]> = [['alice', 'bob'], ['bob', 'alice']]
  if (!rule.adminAllowed) pairs.push(['alice', 'admin'], ['bob', 'admin'])
  return pairs
}

async function refusedToStranger (op: Operation, rule: Rule, expect: (status: number, code: string) => boolean, label: string): Promise<void> {
  await fc.assert(fc.asyncProperty(validRequest(op), fc.constantFrom(...strangers(rule)), async (generated, [owner, stranger]) => {
    await world.ensure()
    const { raw } = materialize(world, { ...generated, path: { ...generated.path, id: new Slot(rule.kind, owner) }, who: stranger })
    // If-Match: none, so that a refusal cannot be a 412 instead.
    delete raw.headers['if-match']
    const before = await storedState(fuzz.app)
    const res = await fuzz.send(op, raw)
    const code = res.statusCode >= 400 ? res.json().code : undefined
    if (!expect(res.statusCode, code)) throw new FuzzFailure(`${stranger} on ${owner}'s resource: expected ${label}`, raw, res)
    const afterwards = await storedState(fuzz.app)
    if (afterwards !== before) throw new FuzzFailure(`a refused request changed stored data\n  ${firstDifference(before, afterwards)}`, raw, res)
  }), { seed: SEED, numRuns: runs(8), endOnFailure: true })
}

test('another user (and the admin, where the admin has no say) is refused on every operation, both directions, nothing changed', async (t) => {
  await fuzz.counted(t, async () => {
    for (const op of owned) {
      const rule = RULES[op.key]!
      await refusedToStranger(op, rule, (status, code) => status === rule.refusal.status && code === rule.refusal.code, `${rule.refusal.status} ${rule.refusal.code}`)
    }
  })
})
