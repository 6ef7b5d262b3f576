import assert from 'node:assert/strict'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { after, describe, test } from 'node:test'
import { assertError, buildTestApp, createAdmin, type TestApp } from '../helper.js'
import { validProduct } from '../products/fixtures.js'
import { BUCKET, startS3Store, type S3Store } from '../support/s3-store.js'
import { pngOf, uploadTo } from './support.js'

// The service with its files in S3 (STORAGE_URL=s3://…), against an S3 API server on loopback in
// a process of its own: uploads, reads and ranges from the bucket, removal and the sweep; the
// store down during an upload (503, nothing kept) and during a read (503), then back; a store
// that never answers (503 once the bounded attempts are spent).

const s3: S3Store = await startS3Store()
const service: TestApp = await buildTestApp({ STORAGE_URL: `s3://${BUCKET}/service-files`, ...s3.env })
const { app } = service
after(async () => {
  await service.close()
  await s3.remove()
})
const admin = await createAdmin(app)
const newProduct = async (): Promise<number> => (await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: validProduct() })).json().id
const stored = async (): Promise<string[]> => { const keys = []; for await (const blob of app.files.store.list()) keys.push(blob.key); return keys.sort() }

describe('files in S3', { timeout: 120_000 }, () => {
  test('an upload is stored in the bucket (the original and its variants), served whole and by range, and removed with its last file', async () => {
    assert.equal(app.files.store.description, `s3://${BUCKET}/service-files`)
    const product = await newProduct()
    const res = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(500, 400, 1))
    assert.equal(res.statusCode, 201, res.body)
    const image = res.json()
    assert.deepEqual(await stored(), [image.sha256, `${image.sha256}.medium`, `${image.sha256}.thumb`])
    const whole = await app.inject({ method: 'GET', url: `/v1/files/${image.id}` })
    assert.equal(whole.statusCode, 200)
    assert.equal(whole.rawPayload.length, image.size)
    const part = await app.inject({ method: 'GET', url: `/v1/files/${image.id}`, headers: { range: 'bytes=8-15' } })
    assert.equal(part.statusCode, 206)
    assert.ok(part.rawPayload.equals(whole.rawPayload.subarray(8, 16)))
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/products/${product}/images/${image.id}`, headers: admin.auth })).statusCode, 204)
    const deadline = Date.now() + 10_000
    while ((await stored()).length > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    assert.deepEqual(await stored(), [])
  })

  test('the store down: an upload is 503 with Retry-After and leaves no row; a read is 503; back up, both work', async () => {
    const product = await newProduct()
    const kept = (await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(60, 60, 2))).json()
    await s3.stop()
    try {
      const refused = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(60, 60, 3))
      assertError(refused, 503, 'SERVICE_UNAVAILABLE')
      assert.ok(Number(refused.headers['retry-after']) > 0)
      const read = await app.inject({ method: 'GET', url: `/v1/files/${kept.id}` })
      assertError(read, 503, 'SERVICE_UNAVAILABLE')
      assert.notEqual(read.headers['cache-control'], 'public, max-age=31536000, immutable', 'a failure is never cached as the file is')
      assert.equal(read.headers.etag, undefined)
    } finally {
      await s3.start()
    }
    const images = (await app.inject({ method: 'GET', url: `/v1/products/${product}` })).json().images as Array<{ id: number }>
    assert.deepEqual(images.map((image) => image.id), [kept.id], 'nothing of the refused upload')
    assert.equal((await app.inject({ method: 'GET', url: `/v1/files/${kept.id}` })).statusCode, 200)
    const again = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(60, 60, 3))
    assert.equal(again.statusCode, 201, again.body)
    await app.blobSweep.run()
    assert.deepEqual(await stored(), [kept.sha256, again.json().sha256].flatMap((key) => [key, `${key}.medium`, `${key}.thumb`]).sort())
  })

  test('a store that takes the connection and never answers: an upload is 503 within STORAGE_TIMEOUT_MS\'s attempts, and leaves no row', async () => {
    const held: Socket[] = []
    const silent = createServer((socket) => { held.push(socket) })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as AddressInfo
    const stalled = await buildTestApp({ STORAGE_URL: `s3://${BUCKET}/stalled`, ...s3.env, AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}`, STORAGE_TIMEOUT_MS: '300' })
    try {
      const owner = await createAdmin(stalled.app)
      const product = (await stalled.app.inject({ method: 'POST', url: '/v1/products', headers: owner.auth, payload: validProduct() })).json().id
      const refused = await uploadTo(stalled.app, `/v1/products/${product}/images`, owner.auth, await pngOf(60, 60, 4))
      assertError(refused, 503, 'SERVICE_UNAVAILABLE')
      assert.ok(held.length > 0, 'the store was asked')
      assert.deepEqual((await stalled.app.inject({ method: 'GET', url: `/v1/products/${product}` })).json().images, [])
    } finally {
      await stalled.close()
      for (const socket of held) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })
})
