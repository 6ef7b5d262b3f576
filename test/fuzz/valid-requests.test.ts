import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { FuzzFailure, runs, SEED, startFuzzApp } from './fuzz-app.js'
import { World } from './fuzz-world.js'
import { allCodes, documentedCodes } from './openapi-operations.js'
import { materialize, validRequest } from './request-arbitrary.js'

// For every operation of the document: requests the document calls valid (path, query, headers
// and body generated from its schemas, with real ids and the right kind of credentials) are
// accepted: a 2xx, a 304, or a business refusal the document lists for that operation (not
// found, not allowed, a conflict, a stale tag). Never a complaint about the request's shape or
// credentials, and every answer matches the document.

const fuzz = await startFuzzApp()
after(fuzz.close)
const world = await World.create(fuzz)
const codes = allCodes(fuzz.operations)

/** Refusals that mean the request itself was judged invalid, which a valid request never is. */
const SHAPE_CODES = new Set(['VALIDATION_ERROR', 'MALFORMED_JSON', 'AUTHENTICATION_REQUIRED', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'])

// Runs per operation: sign-ups, log-ins and password changes each hash or verify a password on
// purpose slowly, so they get fewer.
const SLOW = new Set(['POST /v1/users', 'POST /v1/sessions', 'PUT /v1/users/{id}/password', 'DELETE /v1/users/{id}'])

// A mailed token is known only to whoever reads the mail, and this world reads none: these
// operations are held to documented refusals here (INVALID_TOKEN), and their success paths are
// tested from captured mail (test/accounts/).
// Likewise an identity exists only after a person signed in at the provider (test/oidc/), a
// second factor is turned on and off only with a code from its app (test/mfa/), and a session
// is proved again only with the account's password or a code (test/sign-in/).
const NEEDS_A_MAILED_TOKEN = new Set(['POST /v1/email-verifications', 'POST /v1/password-resets', 'DELETE /v1/users/{id}/identities/{provider}', 'PUT /v1/users/{id}/totp', 'DELETE /v1/users/{id}/totp', 'POST /v1/sessions/current/reauthentication'])

test('valid requests to every operation are accepted', async (t) => {
  await fuzz.counted(t, async () => {
    for (const op of fuzz.operations) {
      let accepted = 0
      await fc.assert(fc.asyncProperty(validRequest(op, codes), async (generated) => {
        await world.ensure()
        const { raw, params, body } = materialize(world, generated)
        const res = await fuzz.send(op, raw)
        world.observe(op.key, params, body, raw.headers.authorization, res)
        if (res.statusCode < 400) { accepted += 1; return }
        const code: string = res.json().code
        // A wrong current password is named as that field's failure: the request was well formed
        // but the value is not the account's password.
        const fields = code === 'VALIDATION_ERROR' ? JSON.stringify(res.json().errors.map((e: { field: string }) => e.field)) : ''
        if (op.key === 'PUT /v1/users/{id}/password' && fields === '["currentPassword"]') return
        // Removing one's own second factor needs both proofs, which the schema leaves optional
        // because an administrator removing another user's needs neither: a missing or wrong
        // one is named as its field.
        if (op.key === 'DELETE /v1/users/{id}/totp' && ['["password"]', '["code"]', '["password","code"]', '["code","password"]'].includes(fields)) return
        // Likewise a re-authentication's password or code that is not the account's.
        if (op.key === 'POST /v1/sessions/current/reauthentication' && (fields === '["password"]' || fields === '["code"]')) return
        if (SHAPE_CODES.has(code) || !documentedCodes(op, res.statusCode).includes(code)) {
          throw new FuzzFailure(`a valid request was refused with ${res.statusCode} ${code}`, raw, res)
        }
      }), { seed: SEED, numRuns: runs(SLOW.has(op.key) ? 6 : 15), endOnFailure: true })
      assert.ok(accepted > 0 || NEEDS_A_MAILED_TOKEN.has(op.key), `${op.key}: no generated valid request succeeded (seed ${SEED}); the generator misses the success path`)
    }
  })
})
