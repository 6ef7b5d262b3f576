import { after, test } from 'node:test'
import fc from 'fast-check'
import { tokenOf } from '../helper.js'
import { runs, SEED, startFuzzApp } from './fuzz-app.js'
import { World } from './fuzz-world.js'
import { HOSTILE_BODY_LIMIT, hostileRequest, materializeHostile, type DeadTokens } from './hostile-requests.js'

// For every operation of the document: odd ids, query parameters, headers, credentials
// (missing, malformed, unknown, logged out, of a deleted user), content types, content
// encodings and raw bodies never produce a 5xx, and every answer is one the document describes
// for that operation (status, media type, body schema, headers).

const fuzz = await startFuzzApp({ BODY_LIMIT_BYTES: HOSTILE_BODY_LIMIT })
after(fuzz.close)
const world = await World.create(fuzz)

async function deadTokens (): Promise<DeadTokens> {
  const { createUser } = await import('../helper.js')
  const gone = await createUser(fuzz.app, { name: 'gone' })
  const loggedOut = await tokenOf(fuzz.app, world.users.alice.email, world.users.alice.password)
  await fuzz.app.inject({ method: 'DELETE', url: '/v1/sessions/current', headers: { authorization: `Bearer ${loggedOut}` } })
  await fuzz.app.inject({ method: 'DELETE', url: `/v1/users/${gone.id}`, headers: gone.auth })
  return { loggedOut, deletedUser: gone.token }
}
const dead = await deadTokens()

test('odd requests to every operation: never a 5xx, always an answer the document describes', async (t) => {
  await fuzz.counted(t, async () => {
    for (const op of fuzz.operations) {
      await fc.assert(fc.asyncProperty(hostileRequest(op), async (hostile) => {
        await world.ensure()
        const { raw, params, body } = materializeHostile(world, dead, hostile)
        const res = await fuzz.send(op, raw)
        world.observe(op.key, params, body, raw.headers.authorization, res)
      }), { seed: SEED, numRuns: runs(15), endOnFailure: true })
    }
  })
})
