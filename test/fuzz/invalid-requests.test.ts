import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import fc from 'fast-check'
import { FuzzFailure, runs, SEED, startFuzzApp } from './fuzz-app.js'
import { World } from './fuzz-world.js'
import { canBreak, invalidRequest } from './invalid-requests.js'
import { materialize } from './request-arbitrary.js'

// For every operation with fields a client can get wrong: a request with one or several of them
// broken (and the right credentials, so that authentication passes) is 400 VALIDATION_ERROR
// naming exactly the broken fields, one entry each, and nothing else happens.

const fuzz = await startFuzzApp()
after(fuzz.close)
const world = await World.create(fuzz)

test('invalid requests to every operation: 400 VALIDATION_ERROR naming exactly the broken fields', async (t) => {
  await fuzz.counted(t, async () => {
    const covered = fuzz.operations.filter(canBreak)
    assert.ok(covered.length >= 15, `only ${covered.length} operations have fields to break`)
    for (const op of covered) {
      await fc.assert(fc.asyncProperty(invalidRequest(op), async ({ request, fields, broken }) => {
        await world.ensure()
        const { raw, params, body } = materialize(world, request)
        const res = await fuzz.send(op, raw)
        world.observe(op.key, params, body, raw.headers.authorization, res)
        const answer = res.statusCode === 400 ? res.json() : undefined
        const named = Array.isArray(answer?.errors) ? answer.errors.map((e: { field: string }) => e.field) : []
        if (answer?.code !== 'VALIDATION_ERROR' || JSON.stringify([...named].sort()) !== JSON.stringify(fields) || new Set(named).size !== named.length) {
          throw new FuzzFailure(`broke ${broken.join('; ')}: expected 400 VALIDATION_ERROR naming ${JSON.stringify(fields)}`, raw, res)
        }
      }), { seed: SEED, numRuns: runs(20), endOnFailure: true })
    }
  })
})
