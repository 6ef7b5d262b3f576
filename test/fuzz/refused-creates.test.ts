import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { FuzzFailure, runs, SEED, startFuzzApp } from './fuzz-app.js'
import { SLOTS, World } from './fuzz-world.js'
import { invalidRequest } from './invalid-requests.js'
import { materialize, validRequest, type GeneratedRequest } from './request-arbitrary.js'
import { firstDifference, storedState } from './stored-state.js'

// Every create of the document (a POST answering 201), sent as a mix of valid requests, invalid
// ones, anonymous ones and ones the business rules refuse (a taken e-mail, someone who is not an
// admin creating a product, an order for a product off sale, sold out or missing, a wrong
// password): whenever the answer is a refusal, the stored users, sessions, posts, products and
// orders are exactly as before (no row, no stock taken).

const fuzz = await startFuzzApp()
after(fuzz.close)
const world = await World.create(fuzz)

// A stream ticket's create has no body: its only refusal is the 401 of a missing credential,
// which the credentials fuzz covers for every operation.
const creates = fuzz.operations.filter((op) => op.method === 'POST' && op.responses['201'] !== undefined && op.body !== undefined)

/** A sign-up with the e-mail of an existing account (any case) is refused. */
function takenEmail (request: GeneratedRequest): fc.Arbitrary<GeneratedRequest> {
  return fc.tuple(fc.constantFrom(...SLOTS.email), fc.boolean()).map(([slot, upper]) => ({
    ...request, body: { ...(request.body as object), email: upper ? { upper: slot } : slot }
  }))
}

test('a refused create leaves nothing behind', async (t) => {
  await fuzz.counted(t, async () => {
    assert.ok(creates.length >= 5, `the document has ${creates.length} creates`)
    for (const op of creates) {
      const refusals = new Set<number>()
      const requests = fc.oneof(
        validRequest(op),
        validRequest(op).map((r) => ({ ...r, who: undefined })),
        invalidRequest(op).map((i) => i.request),
        op.key === 'POST /v1/users' ? validRequest(op).chain(takenEmail) : validRequest(op)
      )
      await fc.assert(fc.asyncProperty(requests, async (generated) => {
        await world.ensure()
        const body = generated.body as Record<string, unknown> | undefined
        const upper = body?.email as { upper?: unknown } | undefined
        const { raw, params, body: sent } = materialize(world, upper?.upper === undefined ? generated : { ...generated, body: { ...body, email: upper.upper } })
        if (upper?.upper !== undefined) raw.payload = JSON.stringify({ ...(sent as object), email: String((sent as { email: string }).email).toUpperCase() })
        const before = await storedState(fuzz.app)
        const res = await fuzz.send(op, raw)
        world.observe(op.key, params, sent, raw.headers.authorization, res)
        if (res.statusCode < 400) return
        refusals.add(res.statusCode)
        const afterwards = await storedState(fuzz.app)
        if (afterwards !== before) throw new FuzzFailure(`a refused create (${res.statusCode}) changed stored data\n  ${firstDifference(before, afterwards)}`, raw, res)
      }), { seed: SEED, numRuns: runs(op.key === 'POST /v1/users' || op.key === 'POST /v1/sessions' ? 10 : 16), endOnFailure: true })
      t.diagnostic(`${op.key}: refusals seen ${[...refusals].sort().join(', ')}`)
      // Anyone may begin a sign-in with a provider: its only refusals are its body's (400).
      const ways = op.key === 'POST /v1/oidc-authorizations' ? 1 : 2
      assert.ok(refusals.size >= ways, `${op.key}: the generated requests were refused in fewer than ${ways} ways (${[...refusals].join(', ')})`)
    }
  })
})
