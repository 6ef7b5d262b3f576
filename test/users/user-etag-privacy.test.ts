import assert from 'node:assert/strict'
import { createHash, hash } from 'node:crypto'
import { after, describe, test } from 'node:test'
import { toIso } from '../../src/db/types.js'
import { buildTestApp, createUser, uniqueEmail } from '../helper.js'

// A public user's tag must say nothing about the private e-mail. Were it a hash over the e-mail,
// anyone could check e-mail guesses: offline against the tag, or online with If-None-Match (a
// 304 confirms the guess). These tests replay that attack against GET /v1/users/{id}.

const { app, close } = await buildTestApp()
after(close)

const get = (id: number, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: `/v1/users/${id}`, headers })
const put = (id: number, payload: object, headers: Record<string, string>) => app.inject({ method: 'PUT', url: `/v1/users/${id}`, headers, payload })

function json (value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => typeof v === 'bigint' ? v.toString() : v)
}

/** Tags an attacker would build from a guessed e-mail: the old construction and plain hashes of the private members. */
function guessedTags (user: { id: number, name: string }, email: string, updatedAt: string): string[] {
  const sources = [
    json({ id: BigInt(user.id), email, name: user.name, updatedAt }),
    json({ id: user.id, email, name: user.name, updatedAt }),
    json({ id: BigInt(user.id), email, name: user.name }),
    json({ id: user.id, email, name: user.name })
  ]
  return sources.flatMap((source) => [
    `"${createHash('sha256').update(source).digest('base64url').slice(0, 32)}"`,
    `"${hash('sha1', source, 'base64url')}"`,
    `"${hash('md5', source, 'base64url')}"`
  ])
}

describe('the public user tag reveals nothing about the e-mail', () => {
  test('the tag of GET /v1/users/{id} stays the same when only the e-mail changes', async () => {
    const user = await createUser(app, { name: 'Quiet' })
    const before = (await get(user.id)).headers.etag as string
    for (let i = 0; i < 3; i++) {
      assert.equal((await put(user.id, { email: uniqueEmail('changed'), name: 'Quiet' }, user.auth)).statusCode, 200)
      assert.equal((await get(user.id)).headers.etag, before, 'a tag that moved with the e-mail would leak it')
    }
  })

  test('If-None-Match built from e-mail guesses, the right one included, never gives 304', async () => {
    const user = await createUser(app, { name: 'Target' })
    const row = await app.db.selectFrom('users').select(['email', 'updated_at']).where('id', '=', BigInt(user.id)).executeTakeFirstOrThrow()
    const guesses = [uniqueEmail('guess'), row.email, row.email.toUpperCase(), uniqueEmail('guess')]
    const real = (await get(user.id)).headers.etag as string
    for (const email of guesses) {
      for (const tag of guessedTags(user, email, toIso(row.updated_at))) {
        assert.notEqual(tag, real, 'the tag is reproducible from the e-mail')
        const res = await get(user.id, { 'if-none-match': tag })
        assert.equal(res.statusCode, 200, `a 304 for ${email} confirms the guess`)
        assert.deepEqual(res.json(), { id: user.id, name: 'Target' })
      }
    }
    // The real tag still works as it should.
    assert.equal((await get(user.id, { 'if-none-match': real })).statusCode, 304)
  })

  test('the tag of the representation with the e-mail is sent only beside the e-mail', async () => {
    const email = uniqueEmail('owner')
    const created = await app.inject({ method: 'POST', url: '/v1/users', payload: { email, name: 'Owner', password: 'correct horse battery' } })
    assert.equal(created.statusCode, 201)
    assert.equal(created.json().email, email)
    const privateTag = created.headers.etag as string
    assert.match(privateTag, /^"[^"]+"$/)
    const read = await get(created.json().id)
    assert.notEqual(read.headers.etag, privateTag)
    assert.equal((await get(created.json().id, { 'if-none-match': privateTag })).statusCode, 200)
  })
})
