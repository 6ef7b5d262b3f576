import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { buildTestApp } from '../helper.js'

// The client address (per-client limits) comes from X-Forwarded-For only when the TCP peer is
// a proxy named in TRUST_PROXY; otherwise a client could choose its own address. Observed here
// through the general rate limit, which counts per client address.

async function statuses (base: string, forwardedFor: string[]): Promise<number[]> {
  const out: number[] = []
  for (const address of forwardedFor) {
    out.push((await fetch(`${base}/`, { headers: { 'x-forwarded-for': address } })).status)
  }
  return out
}

describe('TRUST_PROXY', () => {
  test('a trusted peer (this test, on 127.0.0.1): each forwarded address is its own client', async () => {
    const { url, close } = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '127.0.0.1' })
    after(close)
    const base = await url()
    assert.deepEqual(await statuses(base, ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4']), [200, 200, 200, 200])
    // The same forwarded client, counted as one.
    assert.deepEqual(await statuses(base, ['198.51.100.9', '198.51.100.9', '198.51.100.9']), [200, 200, 429])
  })

  test('a trusted range in CIDR form', async () => {
    const { url, close } = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '1', TRUST_PROXY: '127.0.0.0/8' })
    after(close)
    assert.deepEqual(await statuses(await url(), ['203.0.113.1', '203.0.113.2']), [200, 200])
  })

  test('no TRUST_PROXY (the default): X-Forwarded-For is ignored, the peer is the client', async () => {
    const { url, close } = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '2' })
    after(close)
    assert.deepEqual(await statuses(await url(), ['198.51.100.1', '198.51.100.2', '198.51.100.3']), [200, 200, 429])
  })

  test('a peer that is not the trusted proxy cannot choose its address', async () => {
    const { url, close } = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: '10.1.2.3' })
    after(close)
    assert.deepEqual(await statuses(await url(), ['198.51.100.1', '198.51.100.2', '198.51.100.3']), [200, 200, 429])
  })
})
