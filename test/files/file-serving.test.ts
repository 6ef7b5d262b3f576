import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin } from '../helper.js'
import { validProduct } from '../products/fixtures.js'
import { pngOf, uploadTo } from './support.js'

// Serving a file's bytes: conditional requests, ranges, HEAD, the protective headers, and reads
// that the general rate limit does not count (uploads it does).

const { app, close } = await buildTestApp({ RATE_LIMIT_PER_MINUTE: '8' })
after(close)
const admin = await createAdmin(app)
const product = (await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: validProduct() })).json().id
const png = await pngOf(300, 200, 7)
const uploaded = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, png)
assert.equal(uploaded.statusCode, 201, uploaded.body)
const image = uploaded.json() as { id: number, size: number, sha256: string }
const address = `/v1/files/${image.id}`
const whole = (await app.inject({ method: 'GET', url: address })).rawPayload

describe('serving a file', { timeout: 60_000 }, () => {
  test('If-None-Match with its ETag (or *, or weak) is 304 without a body; another tag is 200', async () => {
    for (const tag of [`"${image.sha256}"`, `W/"${image.sha256}"`, '*', `"x", "${image.sha256}"`]) {
      const res = await app.inject({ method: 'GET', url: address, headers: { 'if-none-match': tag } })
      assert.equal(res.statusCode, 304, tag)
      assert.equal(res.body, '')
      assert.equal(res.headers.etag, `"${image.sha256}"`)
      assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable')
    }
    assert.equal((await app.inject({ method: 'GET', url: address, headers: { 'if-none-match': '"other"' } })).statusCode, 200)
    const thumb = await app.inject({ method: 'GET', url: `${address}/thumb` })
    assert.equal(thumb.headers.etag, `"${image.sha256}.thumb"`)
    assert.equal((await app.inject({ method: 'GET', url: `${address}/thumb`, headers: { 'if-none-match': thumb.headers.etag as string } })).statusCode, 304)
  })

  test('one range is 206 with Content-Range; a suffix, an open end; past the end 416 with bytes */size; several ranges or a malformed one: the whole file', async () => {
    const size = image.size
    const cases: Array<[string, number, number]> = [['bytes=0-9', 0, 9], ['bytes=10-', 10, size - 1], ['bytes=-5', size - 5, size - 1], [`bytes=5-${size + 100}`, 5, size - 1]]
    for (const [range, start, end] of cases) {
      const res = await app.inject({ method: 'GET', url: address, headers: { range } })
      assert.equal(res.statusCode, 206, range)
      assert.equal(res.headers['content-range'], `bytes ${start}-${end}/${size}`, range)
      assert.equal(Number(res.headers['content-length']), end - start + 1, range)
      assert.ok(res.rawPayload.equals(whole.subarray(start, end + 1)), range)
    }
    for (const range of [`bytes=${size}-`, `bytes=${size + 10}-${size + 20}`, 'bytes=-0']) {
      const res = await app.inject({ method: 'GET', url: address, headers: { range } })
      assertError(res, 416, 'RANGE_NOT_SATISFIABLE')
      assert.equal(res.headers['content-range'], `bytes */${size}`, range)
    }
    for (const range of ['bytes=0-1,5-6', 'items=0-1', 'bytes=9-2', 'bytes=abc', 'bytes=-']) {
      const res = await app.inject({ method: 'GET', url: address, headers: { range } })
      assert.equal(res.statusCode, 200, range)
      assert.ok(res.rawPayload.equals(whole), range)
    }
    // If-Range: the range while the tag matches, else the whole file.
    assert.equal((await app.inject({ method: 'GET', url: address, headers: { range: 'bytes=0-9', 'if-range': `"${image.sha256}"` } })).statusCode, 206)
    assert.equal((await app.inject({ method: 'GET', url: address, headers: { range: 'bytes=0-9', 'if-range': '"stale"' } })).statusCode, 200)
  })

  test('HEAD: the same headers, no body', async () => {
    const res = await app.inject({ method: 'HEAD', url: address })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '')
    assert.equal(Number(res.headers['content-length']), image.size)
    assert.equal(res.headers['content-type'], 'image/png')
    assert.equal(res.headers.etag, `"${image.sha256}"`)
    assert.equal(res.headers['accept-ranges'], 'bytes')
  })

  test('every answer protects the page that shows it: nosniff, a sandboxing CSP, inline, Last-Modified', async () => {
    for (const url of [address, `${address}/thumb`, `${address}/medium`]) {
      const res = await app.inject({ method: 'GET', url })
      assert.equal(res.headers['x-content-type-options'], 'nosniff', url)
      assert.equal(res.headers['content-security-policy'], "default-src 'none'; sandbox", url)
      assert.equal(res.headers['content-disposition'], 'inline', url)
      assert.ok(!Number.isNaN(Date.parse(res.headers['last-modified'] as string)), url)
    }
  })

  test('reads are not counted by the rate limit; uploads are', async () => {
    for (let i = 0; i < 30; i++) assert.equal((await app.inject({ method: 'GET', url: `${address}/thumb`, remoteAddress: '192.0.2.7' })).statusCode, 200)
    const answers = []
    for (let i = 0; i < 10; i++) answers.push(await app.inject({ method: 'POST', url: `/v1/products/${product}/images`, remoteAddress: '192.0.2.8', headers: { ...admin.auth, 'content-type': 'image/png' }, payload: png }))
    // The limit (8 a minute) counts the session's requests from this address: 201 until it is spent, then 429.
    const refused = answers.filter((res) => res.statusCode !== 201)
    assert.ok(refused.length > 0 && refused.length < 10, answers.map((res) => res.statusCode).join(' '))
    for (const res of refused) assertError(res, 429, 'TOO_MANY_REQUESTS')
  })
})
