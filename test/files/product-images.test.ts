import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, describe, test } from 'node:test'
import sharp from 'sharp'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { validProduct } from '../products/fixtures.js'

// A product's images, end to end through the app: upload, the product's representation, the
// bytes served, removal.

const { app, config, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const user = await createUser(app)

const png = await sharp({ create: { width: 1200, height: 900, channels: 3, background: { r: 10, g: 120, b: 200 } } }).png().toBuffer()

async function newProduct (): Promise<{ id: number }> {
  const res = await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: validProduct() })
  assert.equal(res.statusCode, 201)
  return res.json()
}

const upload = async (productId: number | string, body: Buffer, contentType = 'image/png', headers: Record<string, string> = admin.auth) =>
  await app.inject({ method: 'POST', url: `/v1/products/${productId}/images`, headers: { ...headers, 'content-type': contentType }, payload: body })

describe('a product\'s images', { timeout: 60_000 }, () => {
  test('the metrics show every refusal reason from the start, at 0, and count uploads, bytes, refusals and processing', async () => {
    const counted = async (): Promise<Record<string, number>> => Object.fromEntries((await app.metricsRegistry.metrics()).split('\n')
      .filter((line) => /^file_(uploads_total|upload_bytes_total|uploads_refused_total|processing_seconds_count)/.test(line))
      .map((line) => [line.split(' ')[0]!, Number(line.split(' ')[1])]))
    const before = await counted()
    for (const reason of ['too-large', 'not-an-image', 'polyglot', 'undecodable', 'too-many-pixels', 'type-mismatch', 'too-many-images', 'busy']) {
      assert.equal(before[`file_uploads_refused_total{reason="${reason}"}`], 0, reason)
    }
    const product = await newProduct()
    assert.equal((await upload(product.id, png)).statusCode, 201)
    assert.equal((await upload(product.id, png, 'image/jpeg')).statusCode, 415)
    assert.equal((await upload(product.id, png, 'text/plain')).statusCode, 415)
    const after = await counted()
    assert.equal(after.file_uploads_total, 1)
    assert.ok(after.file_upload_bytes_total! > 0)
    assert.equal(after['file_uploads_refused_total{reason="type-mismatch"}'], 1)
    assert.equal(after['file_uploads_refused_total{reason="not-an-image"}'], 1)
    assert.equal(after.file_processing_seconds_count, 2)
  })

  test('an admin uploads a PNG: 201 with Location and the image; the product shows it; its bytes are served', async () => {
    const product = await newProduct()
    const res = await upload(product.id, png)
    assert.equal(res.statusCode, 201, res.body)
    const image = res.json()
    assert.deepEqual(Object.keys(image).sort(), ['contentType', 'createdAt', 'height', 'id', 'sha256', 'size', 'url', 'variants', 'width'])
    assert.equal(image.contentType, 'image/png')
    assert.deepEqual([image.width, image.height], [1200, 900])
    assert.equal(image.url, `${config.publicUrl}/v1/files/${image.id}`)
    assert.deepEqual(image.variants, { thumb: `${image.url}/thumb`, medium: `${image.url}/medium` })
    assert.equal(res.headers.location, `/v1/files/${image.id}`)

    const read = await app.inject({ method: 'GET', url: `/v1/products/${product.id}` })
    assert.deepEqual(read.json().images, [image])

    const served = await app.inject({ method: 'GET', url: `/v1/files/${image.id}` })
    assert.equal(served.statusCode, 200)
    assert.equal(served.headers['content-type'], 'image/png')
    assert.equal(Number(served.headers['content-length']), image.size)
    assert.equal(createHash('sha256').update(served.rawPayload).digest('hex'), image.sha256)
    assert.equal(served.headers.etag, `"${image.sha256}"`)
    assert.equal(served.headers['cache-control'], 'public, max-age=31536000, immutable')
    assert.equal(served.headers['x-content-type-options'], 'nosniff')
    assert.equal(served.headers['content-security-policy'], "default-src 'none'; sandbox")

    const thumb = await app.inject({ method: 'GET', url: `/v1/files/${image.id}/thumb` })
    assert.equal(thumb.statusCode, 200)
    assert.equal(thumb.headers['content-type'], 'image/webp')
    const meta = await sharp(thumb.rawPayload).metadata()
    assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 200, 150])

    const removed = await app.inject({ method: 'DELETE', url: `/v1/products/${product.id}/images/${image.id}`, headers: admin.auth })
    assert.equal(removed.statusCode, 204)
    assertError(await app.inject({ method: 'GET', url: `/v1/files/${image.id}` }), 404, 'FILE_NOT_FOUND')
    assert.deepEqual((await app.inject({ method: 'GET', url: `/v1/products/${product.id}` })).json().images, [])
  })

  test('refusals: not an admin 403, unknown product 404, not an image 415, a lying type 415', async () => {
    const product = await newProduct()
    assertError(await upload(product.id, png, 'image/png', user.auth), 403, 'ACCESS_DENIED')
    assertError(await upload(product.id, png, 'image/png', {}), 401, 'AUTHENTICATION_REQUIRED')
    assertError(await upload(999_999, png), 404, 'PRODUCT_NOT_FOUND')
    assertError(await upload(product.id, Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), 'image/png'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await upload(product.id, png, 'image/jpeg'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await upload(product.id, png, 'application/json'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assert.deepEqual((await app.inject({ method: 'GET', url: `/v1/products/${product.id}` })).json().images, [])
  })
})
