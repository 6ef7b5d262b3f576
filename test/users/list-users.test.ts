import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, createUser, type TestUser } from '../helper.js'
import { walkPages } from '../list-walk.js'
import { write } from '../../src/db/write.js'

// GET /v1/users, an administrator's list of accounts: the representation, each filter and both
// sorts against the same rule applied in memory, keyset pages, and everyone else refused.

const { app, close } = await buildTestApp()
after(close)

interface Listed { id: number, email: string, name: string, role: string, emailVerified: boolean, pendingEmail: string | null, mfaEnabled: boolean, createdAt: string }

const admin = await createAdmin(app)
const mark = `m${Date.now().toString(36)}`
// Accounts whose addresses and names hold what the search must find, and what it must not
// mistake for a pattern (`%`, `_`, `\`, a quote).
const specs: Array<{ email: string, name: string }> = [
  { email: `ada.${mark}@example.com`, name: 'Ada Lovelace' },
  { email: `grace.${mark}@Example.org`, name: 'Grace' },
  { email: `zoe.${mark}@example.com`, name: 'Zoë 100%' },
  { email: `under_score.${mark}@example.com`, name: 'Under "Q"' },
  { email: `underxscore.${mark}@example.com`, name: 'Back\\slash' }
]
const users: TestUser[] = []
for (const spec of specs) users.push(await createUser(app, spec))
// Known creation times (two the same, to the millisecond), a proven address, a pending one, a factor.
const at = (minute: number) => new Date(Date.UTC(2026, 10, 20, 9, minute)).toISOString()
await write(app.db, async (trx) => {
  for (const [i, user] of users.entries()) await trx.updateTable('users').set({ created_at: at(i === 4 ? 3 : i) }).where('id', '=', BigInt(user.id)).execute()
  await trx.updateTable('users').set({ email_verified: 1 }).where('id', '=', BigInt(users[0]!.id)).execute()
  await trx.updateTable('users').set({ pending_email: `new.${mark}@example.net` }).where('id', '=', BigInt(users[1]!.id)).execute()
  await trx.insertInto('totp_factors').values({ user_id: users[2]!.id, secret: 'sealed', status: 'ACTIVE', created_at: at(9), activated_at: at(9) }).execute()
  await trx.insertInto('totp_factors').values({ user_id: users[3]!.id, secret: 'sealed', status: 'PENDING', created_at: at(9) }).execute()
})

const list = async (query: string, who: TestUser = admin) => await app.inject({ method: 'GET', url: `/v1/users${query}`, headers: who.auth })
const walk = async (query: string, limit = 2) => await walkPages<Listed>(app, `/v1/users?${query}${query === '' ? '' : '&'}limit=${limit}`, admin.auth)
const all = await walk('', 100)
const ids = (items: Listed[]) => items.map((u) => u.id)
const newestFirst = (a: Listed, b: Listed) => b.createdAt.localeCompare(a.createdAt) || b.id - a.id
const oldestFirst = (a: Listed, b: Listed) => -newestFirst(a, b)

describe('GET /v1/users', () => {
  test('an administrator reads every account, newest first, each as an administrator sees it', async () => {
    assert.equal(all.length, users.length + 1)
    assert.deepEqual(ids(all), ids([...all].sort(newestFirst)))
    const ada = all.find((u) => u.id === users[0]!.id)!
    assert.deepEqual(ada, { id: users[0]!.id, email: specs[0]!.email, name: 'Ada Lovelace', role: 'USER', emailVerified: true, pendingEmail: null, mfaEnabled: false, createdAt: at(0) })
    assert.equal(all.find((u) => u.id === users[1]!.id)!.pendingEmail, `new.${mark}@example.net`)
    assert.equal(all.find((u) => u.id === users[2]!.id)!.mfaEnabled, true)
    assert.equal(all.find((u) => u.id === users[3]!.id)!.mfaEnabled, false, 'a factor not yet activated is not on')
    const me = all.find((u) => u.id === admin.id)!
    assert.equal(me.role, 'ADMIN')
    assert.equal(me.emailVerified, true)
    for (const user of all) assert.deepEqual(Object.keys(user).sort(), ['createdAt', 'email', 'emailVerified', 'id', 'mfaEnabled', 'name', 'pendingEmail', 'role'])
  })

  test('filters and sorts: every combination is the rule applied in memory, walked two at a time', async () => {
    const filters: Array<[string, (u: Listed) => boolean]> = [
      ['', () => true],
      ['q=example.com', (u) => u.email.toLowerCase().includes('example.com')],
      ['q=EXAMPLE.ORG', (u) => u.email.toLowerCase().includes('example.org')],
      ['q=lovelace', (u) => u.name.toLowerCase().includes('lovelace')],
      ['q=ZO%C3%8B', (u) => u.name.startsWith('Zoë')],
      [`q=${mark}`, (u) => u.email.includes(mark)],
      ['role=ADMIN', (u) => u.role === 'ADMIN'],
      ['role=USER', (u) => u.role === 'USER'],
      ['emailVerified=true', (u) => u.emailVerified],
      ['emailVerified=false', (u) => !u.emailVerified],
      [`q=${mark}&emailVerified=false&role=USER`, (u) => u.email.includes(mark) && !u.emailVerified && u.role === 'USER']
    ]
    for (const [query, keep] of filters) {
      for (const [sort, order] of [['', newestFirst], ['sort=-createdAt', newestFirst], ['sort=createdAt', oldestFirst]] as const) {
        const q = [query, sort].filter((part) => part !== '').join('&')
        const expected = ids(all.filter(keep).sort(order))
        assert.ok(expected.length > 0 || query === '', q)
        assert.deepEqual(ids(await walk(q)), expected, q)
      }
    }
  })

  test('q is text, never a pattern: %, _, \\ and quotes are themselves; spaces at its ends are ignored', async () => {
    const found = async (q: string) => ids(await walk(`q=${encodeURIComponent(q)}`, 100))
    assert.deepEqual(await found('under_score'), [users[3]!.id], '_ is not any character')
    assert.deepEqual(await found('100%'), [users[2]!.id])
    assert.deepEqual(await found('0%Z'), [])
    assert.deepEqual(await found('k\\s'), [users[4]!.id])
    assert.deepEqual(await found('"Q"'), [users[3]!.id])
    assert.deepEqual(await found('  lovelace  '), [users[0]!.id])
    assert.deepEqual(await found('nobody-has-this'), [])
    // FTS5's own syntax inside the phrase is text too.
    assert.deepEqual(await found('ada OR grace'), [])
    assert.deepEqual(await found('NEAR(ada'), [])
  })

  test('a changed address or name is found by its new text, and no longer by its old', async () => {
    const user = await createUser(app, { email: `before.${mark}@example.com`, name: 'Before' })
    const res = await app.inject({ method: 'PUT', url: `/v1/users/${user.id}`, headers: user.auth, payload: { email: user.email, name: 'Afterwards' } })
    assert.equal(res.statusCode, 200, res.body)
    assert.deepEqual(ids(await walk('q=afterwards')), [user.id])
    assert.deepEqual(ids(await walk('q=Before&role=USER')), [user.id], 'the address still says before')
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/users/${user.id}`, headers: user.auth })).statusCode, 204)
    assert.deepEqual(ids(await walk('q=afterwards')), [])
  })

  test('a cursor belongs to its sort and filters: 400 CURSOR_MISMATCH with others, 400 on cursor when it is not one', async () => {
    const first = await list(`?q=${mark}&limit=1`)
    assert.equal(first.statusCode, 200)
    const cursor = new URL(/<([^>]+)>/.exec(String(first.headers.link))![1]!, 'http://x').searchParams.get('cursor')!
    assert.equal((await list(`?q=${mark}&limit=3&cursor=${cursor}`)).statusCode, 200, 'the page size may change')
    assertError(await list(`?q=example&limit=1&cursor=${cursor}`), 400, 'CURSOR_MISMATCH')
    assertError(await list(`?q=${mark}&sort=createdAt&cursor=${cursor}`), 400, 'CURSOR_MISMATCH')
    assertError(await list(`?cursor=${cursor}`), 400, 'CURSOR_MISMATCH')
    assertError(await list('?cursor=nope'), 400, 'VALIDATION_ERROR', ['cursor'])
  })

  test('bad parameters: 400 naming each, all at once', async () => {
    const cases: Array<[string, string[]]> = [
      ['?q=ab', ['q']],
      ['?q=%20ab%20%20', ['q']],
      ['?q=', ['q']],
      [`?q=${'a'.repeat(255)}`, ['q']],
      ['?q=ab%00cd', ['q']],
      ['?role=ROOT&emailVerified=maybe', ['role', 'emailVerified']],
      ['?sort=email&limit=0', ['sort', 'limit']],
      ['?limit=101&offset=5&page=2', ['limit', 'offset', 'page']],
      ['?role=admin', ['role']]
    ]
    for (const [query, fields] of cases) { const res = await list(query); assert.equal(res.statusCode, 400, query); assertError(res, 400, 'VALIDATION_ERROR', fields) }
  })

  test('anyone but an administrator: 401 without a session, 403 ACCESS_DENIED for a user, 403 INSUFFICIENT_SCOPE for any API key', async () => {
    assertError(await app.inject({ method: 'GET', url: '/v1/users' }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await app.inject({ method: 'GET', url: '/v1/users?role=nope' }), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await list('', users[0]!), 403, 'ACCESS_DENIED')
    assertError(await list(`?q=${mark}`, users[0]!), 403, 'ACCESS_DENIED')
    const key = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: admin.auth, payload: { name: 'console', scopes: ['orders:read', 'products:write'] } })
    assert.equal(key.statusCode, 201, key.body)
    assertError(await app.inject({ method: 'GET', url: '/v1/users', headers: { authorization: `Bearer ${key.json().key as string}` } }), 403, 'INSUFFICIENT_SCOPE')
  })
})
