import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { ensureAdmin } from '../../src/users/admin-bootstrap.js'
import { assertError, buildTestApp, createUser, logIn, uniqueEmail } from '../helper.js'

// ADMIN_EMAIL / ADMIN_PASSWORD at start-up: that user exists with role ADMIN and that password,
// created, or promoted and re-keyed.

const { app, close } = await buildTestApp()
after(close)

const current = (token: string) => app.inject({ method: 'GET', url: '/v1/sessions/current', headers: { authorization: `Bearer ${token}` } })
const usersWith = async (email: string) => await app.db.selectFrom('users').selectAll()
  .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase())).execute()

describe('ensureAdmin', () => {
  test('creates an ADMIN that logs in with that password; the role shows in the session', async () => {
    const email = uniqueEmail('boss')
    assert.equal(await ensureAdmin(app.db, email, 'admin password 1'), 'created')
    const res = await logIn(app, { email: email, password: 'admin password 1' })
    assert.equal(res.statusCode, 201)
    assert.equal(res.json().user.role, 'ADMIN')
    assert.equal(res.json().user.email, email)
    const me = await current(res.json().token)
    assert.equal(me.json().user.role, 'ADMIN')
    const [row] = await usersWith(email)
    assert.match(row!.password_hash, /^\$argon2id\$/)
  })

  test('the created admin has a valid name (at most 20 characters, non-blank)', async () => {
    const email = `${'averyveryverylonglocalpart'}.${Date.now()}@example.com`
    await ensureAdmin(app.db, email, 'admin password 1')
    const [row] = await usersWith(email)
    assert.ok([...row!.name].length >= 1 && [...row!.name].length <= 20, row!.name)
    assert.match(row!.name, /\S/)
  })

  test('promotes and re-keys an existing user: the old password stops working', async () => {
    const user = await createUser(app)
    assert.equal(await ensureAdmin(app.db, user.email.toUpperCase(), 'the admin password'), 'updated')
    assertError(await logIn(app, { email: user.email, password: user.password }), 401, 'INVALID_CREDENTIALS')
    const res = await logIn(app, { email: user.email, password: 'the admin password' })
    assert.equal(res.statusCode, 201)
    assert.equal(res.json().user.role, 'ADMIN')
    assert.equal(res.json().user.id, user.id)
    assert.equal(res.json().user.name, user.name, 'the rest of the account is kept')
    assert.equal((await usersWith(user.email)).length, 1)
  })

  test("promotion revokes the account's earlier sessions (they were opened with the old password)", async () => {
    // Whoever registered the address before the operator chose it must not keep a session that
    // has just become an admin's.
    const user = await createUser(app)
    await ensureAdmin(app.db, user.email, 'the admin password')
    assertError(await current(user.token), 401, 'AUTHENTICATION_REQUIRED')
    const fresh = await logIn(app, { email: user.email, password: 'the admin password' })
    assert.equal((await current(fresh.json().token)).json().user.role, 'ADMIN')
  })

  test('running it again (every start-up) keeps one admin and re-keys it', async () => {
    const email = uniqueEmail('again')
    assert.equal(await ensureAdmin(app.db, email, 'first password'), 'created')
    assert.equal(await ensureAdmin(app.db, email, 'second password'), 'updated')
    assert.equal((await usersWith(email)).length, 1)
    assertError(await logIn(app, { email: email, password: 'first password' }), 401, 'INVALID_CREDENTIALS')
    assert.equal((await logIn(app, { email: email, password: 'second password' })).json().user.role, 'ADMIN')
  })

  test('several instances starting at once with the same settings all succeed, with one admin', async () => {
    const email = uniqueEmail('twin')
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => ensureAdmin(app.db, email, 'twin password')))
    assert.equal(outcomes.filter((o) => o === 'created').length, 1)
    assert.equal(outcomes.filter((o) => o === 'unchanged').length, 5)
    const rows = await usersWith(email)
    assert.equal(rows.length, 1)
    assert.equal(rows[0]!.role, 'ADMIN')
    assert.equal((await logIn(app, { email: email, password: 'twin password' })).statusCode, 201)
  })

  test('a restart with the same settings changes nothing and keeps the admin logged in', async () => {
    const email = uniqueEmail('steady')
    await ensureAdmin(app.db, email, 'steady password')
    const token = (await logIn(app, { email: email, password: 'steady password' })).json().token
    const before = (await usersWith(email))[0]!
    assert.equal(await ensureAdmin(app.db, email, 'steady password'), 'unchanged')
    assert.deepEqual((await usersWith(email))[0], before)
    assert.equal((await current(token)).statusCode, 200)
  })

  test('re-keying an existing admin revokes its sessions', async () => {
    const email = uniqueEmail('rekey')
    await ensureAdmin(app.db, email, 'old admin password')
    const token = (await logIn(app, { email: email, password: 'old admin password' })).json().token
    assert.equal(await ensureAdmin(app.db, email, 'new admin password'), 'updated')
    assertError(await current(token), 401, 'AUTHENTICATION_REQUIRED')
  })

  test('an ADMIN cannot be created through the API', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/users', payload: { email: uniqueEmail(), password: 'correct horse', name: 'x', role: 'ADMIN' } })
    assertError(res, 400, 'VALIDATION_ERROR', ['role'])
  })
})
