import { after, test } from 'node:test'
import fc from 'fast-check'
import { createUser, tokenOf } from '../helper.js'
import { FuzzFailure, runs, SEED, startFuzzApp } from './fuzz-app.js'
import { World } from './fuzz-world.js'
import { brokenAuthorization } from './hostile-requests.js'
import { canBreak, invalidRequest } from './invalid-requests.js'
import { materialize, validRequest } from './request-arbitrary.js'
import { firstDifference, storedState } from './stored-state.js'
import { write } from '../../src/db/write.js'

// Every operation the document marks as needing a token, sent without one or with a broken one
// (missing, malformed, unknown, logged out, expired, of a deleted user), is 401
// AUTHENTICATION_REQUIRED with a Bearer challenge, whatever else the request holds (a valid or
// an invalid body), and changes nothing that is stored.

const fuzz = await startFuzzApp()
after(fuzz.close)
const world = await World.create(fuzz)

async function deadTokens (): Promise<string[]> {
  const { app } = fuzz
  const loggedOut = await tokenOf(app, world.users.alice.email, world.users.alice.password)
  await app.inject({ method: 'DELETE', url: '/v1/sessions/current', headers: { authorization: `Bearer ${loggedOut}` } })
  const expired = await tokenOf(app, world.users.bob.email, world.users.bob.password)
  await write(app.db, async (trx) => await trx.updateTable('sessions').set({ expires_at: '2001-01-01T00:00:00.000Z' }).where('expires_at', '>', '2001-01-02T00:00:00.000Z')
    .where('id', '=', (await app.db.selectFrom('sessions').select('id').orderBy('id', 'desc').executeTakeFirstOrThrow()).id).execute())
  const gone = await createUser(app, { name: 'gone' })
  await app.inject({ method: 'DELETE', url: `/v1/users/${gone.id}`, headers: gone.auth })
  return [loggedOut, expired, gone.token]
}
const dead = await deadTokens()

const credential = fc.oneof(
  { weight: 2, arbitrary: brokenAuthorization },
  { weight: 1, arbitrary: fc.constantFrom(...dead).chain((token) => fc.constantFrom(`Bearer ${token}`, `bearer ${token}`, `BEARER ${token}`)) }
)

test('every protected operation without a valid token: 401 AUTHENTICATION_REQUIRED, nothing changed', async (t) => {
  await fuzz.counted(t, async () => {
    const secured = fuzz.operations.filter((op) => op.secured)
    for (const op of secured) {
      const request = canBreak(op) ? fc.oneof(validRequest(op), invalidRequest(op).map((i) => i.request)) : validRequest(op)
      await fc.assert(fc.asyncProperty(request, credential, async (generated, authorization) => {
        const { raw } = materialize(world, { ...generated, who: undefined })
        if (authorization === undefined) delete raw.headers.authorization
        else raw.headers.authorization = authorization
        const before = await storedState(fuzz.app)
        const res = await fuzz.send(op, raw)
        if (res.statusCode !== 401 || res.json().code !== 'AUTHENTICATION_REQUIRED' || !/^Bearer\b/.test(String(res.headers['www-authenticate']))) {
          throw new FuzzFailure('expected 401 AUTHENTICATION_REQUIRED with a Bearer challenge', raw, res)
        }
        const afterwards = await storedState(fuzz.app)
        if (afterwards !== before) throw new FuzzFailure(`an unauthenticated request changed stored data\n  ${firstDifference(before, afterwards)}`, raw, res)
      }), { seed: SEED, numRuns: runs(12), endOnFailure: true })
    }
  })
})
