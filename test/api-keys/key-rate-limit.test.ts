import assert from 'node:assert/strict'
import { after, test } from 'node:test'
import { newKey } from '../../src/auth/api-key-format.js'
import { buildTestApp } from '../helper.js'

// Requests made with an API key count in the key's own window of the general rate limit (8 a
// minute here), not in their address's: two programs behind one address each get the whole
// limit. A key the service does not know buys no window of its own: it counts in its address's.

const LIMIT = 8
const t = await buildTestApp({ RATE_LIMIT_PER_MINUTE: String(LIMIT) })
after(t.close)

test('a key counts in its own window; an unknown key in its address\'s', async () => {
  const { app } = t
  // Sign-up and log-in spend 2 of the address's 8.
  await app.inject({ method: 'POST', url: '/v1/users', payload: { email: 'k@example.com', name: 'K', password: 'key password 1' } })
  const token = (await app.inject({ method: 'POST', url: '/v1/sessions', payload: { email: 'k@example.com', password: 'key password 1' } })).json().token as string
  const session = { authorization: `Bearer ${token}` }
  const makeKey = async (): Promise<{ authorization: string }> => {
    const res = await app.inject({ method: 'POST', url: '/v1/api-keys', headers: session, payload: { name: 'k', scopes: ['orders:read'] } })
    assert.equal(res.statusCode, 201, res.body)
    return { authorization: `Bearer ${res.json().key as string}` }
  }
  const [first, second] = [await makeKey(), await makeKey()]
  // The address has spent 4.
  const statuses = async (headers: Record<string, string>, n: number): Promise<number[]> => {
    const out: number[] = []
    for (let i = 0; i < n; i++) out.push((await app.inject({ method: 'GET', url: '/v1/orders', headers })).statusCode)
    return out
  }
  assert.deepEqual(await statuses(first, LIMIT + 1), [...Array(LIMIT).fill(200), 429])
  const refused = await app.inject({ method: 'GET', url: '/v1/orders', headers: first })
  assert.equal(refused.statusCode, 429)
  assert.ok(Number(refused.headers['retry-after']) > 0)
  assert.deepEqual(await statuses(second, LIMIT), Array(LIMIT).fill(200))
  // Unknown keys count in the address's window: 4 left of it.
  const unknown = { authorization: `Bearer ${newKey().key}` }
  assert.deepEqual(await statuses(unknown, 4), [401, 401, 401, 401])
  assert.deepEqual(await statuses(session, 1), [429])
  assert.deepEqual(await statuses(unknown, 1), [429])
})
