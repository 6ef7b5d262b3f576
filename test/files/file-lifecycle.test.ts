import assert from 'node:assert/strict'
import { utimes } from 'node:fs/promises'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { BlobSweep } from '../../src/files/blob-sweep.js'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { createPost } from '../posts/fixtures.js'
import { validProduct } from '../products/fixtures.js'
import { eventually, pngOf, uploadTo } from './support.js'

// A file from its upload to the removal of its bytes: an avatar replaced, a post or a user
// deleted with their files, the same bytes in two places, the sweep of bytes no row refers to,
// uploads and removals of the same bytes racing, and the events every change records.

const { app, config, close } = await buildTestApp()
after(close)
const admin = await createAdmin(app)
const store = app.files.store
const held = async (key: string): Promise<boolean> => await store.size(key) !== undefined
const heldAll = async (key: string): Promise<boolean> => await held(key) && await held(`${key}.thumb`) && await held(`${key}.medium`)
const goneAll = async (key: string): Promise<boolean> => !await held(key) && !await held(`${key}.thumb`) && !await held(`${key}.medium`)

async function newProduct (): Promise<number> {
  const res = await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: validProduct() })
  assert.equal(res.statusCode, 201)
  return res.json().id
}

describe('a file\'s life', { timeout: 120_000 }, () => {
  test('an avatar: PUT sets it (200), the profile shows it, a second PUT replaces it and the first goes; DELETE removes it; only its user may', async () => {
    const alice = await createUser(app, { name: 'Alice' })
    const bob = await createUser(app, { name: 'Bob' })
    const first = await uploadTo(app, `/v1/users/${alice.id}/avatar`, alice.auth, await pngOf(640, 480, 1), 'image/png', 'PUT')
    assert.equal(first.statusCode, 200, first.body)
    assert.equal(first.headers.location, undefined)
    const profile = async () => (await app.inject({ method: 'GET', url: `/v1/users/${alice.id}/profile` })).json()
    assert.deepEqual((await profile()).avatar, first.json())
    const second = await uploadTo(app, `/v1/users/${alice.id}/avatar`, alice.auth, await pngOf(64, 64, 2), 'image/png', 'PUT')
    assert.equal(second.statusCode, 200)
    assert.deepEqual((await profile()).avatar, second.json())
    assertError(await app.inject({ method: 'GET', url: `/v1/files/${first.json().id}` }), 404, 'FILE_NOT_FOUND')
    await eventually(async () => await goneAll(first.json().sha256), 'the replaced avatar\'s bytes removed')
    assert.ok(await heldAll(second.json().sha256))

    assertError(await uploadTo(app, `/v1/users/${alice.id}/avatar`, bob.auth, await pngOf(8, 8, 3), 'image/png', 'PUT'), 403, 'ACCESS_DENIED')
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${alice.id}/avatar`, headers: bob.auth }), 403, 'ACCESS_DENIED')
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${alice.id}/avatar`, headers: admin.auth }), 403, 'ACCESS_DENIED')
    assertError(await uploadTo(app, `/v1/users/${alice.id}/avatar`, alice.auth, await pngOf(8, 8, 3), 'image/png', 'POST'), 405, 'METHOD_NOT_ALLOWED')
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/users/${alice.id}/avatar`, headers: alice.auth })).statusCode, 204)
    assert.equal((await profile()).avatar, null)
    assertError(await app.inject({ method: 'DELETE', url: `/v1/users/${alice.id}/avatar`, headers: alice.auth }), 404, 'FILE_NOT_FOUND')
    await eventually(async () => await goneAll(second.json().sha256), 'the removed avatar\'s bytes removed')
  })

  test('a deleted post takes its images: their addresses are 404 at once, and the sweep removes their bytes', async () => {
    const author = await createUser(app)
    const post = await createPost(app, author)
    const image = (await uploadTo(app, `/v1/posts/${post.id}/images`, author.auth, await pngOf(50, 50, 10))).json()
    assert.ok(await heldAll(image.sha256))
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/posts/${post.id}`, headers: author.auth })).statusCode, 204)
    assertError(await app.inject({ method: 'GET', url: `/v1/files/${image.id}/thumb` }), 404, 'FILE_NOT_FOUND')
    assert.ok(await heldAll(image.sha256), 'the cascade removes rows, not bytes')
    assert.ok((await app.blobSweep.run())! >= 1)
    assert.ok(await goneAll(image.sha256))
  })

  test('a deleted user takes their avatar and their posts\' images', async () => {
    const leaving = await createUser(app)
    const post = await createPost(app, leaving)
    const avatar = (await uploadTo(app, `/v1/users/${leaving.id}/avatar`, leaving.auth, await pngOf(30, 30, 20), 'image/png', 'PUT')).json()
    const image = (await uploadTo(app, `/v1/posts/${post.id}/images`, leaving.auth, await pngOf(30, 30, 21))).json()
    const deleted = await app.inject({ method: 'DELETE', url: `/v1/users/${leaving.id}`, headers: leaving.auth, payload: { password: leaving.password } })
    assert.equal(deleted.statusCode, 204, deleted.body)
    for (const id of [avatar.id, image.id]) assertError(await app.inject({ method: 'GET', url: `/v1/files/${id}` }), 404, 'FILE_NOT_FOUND')
    await app.blobSweep.run()
    assert.ok(await goneAll(avatar.sha256) && await goneAll(image.sha256))
  })

  test('the same bytes in two places are stored once, and stay while one place still has them', async () => {
    const bytes = await pngOf(90, 60, 30)
    const [a, b] = [await newProduct(), await newProduct()]
    const first = (await uploadTo(app, `/v1/products/${a}/images`, admin.auth, bytes)).json()
    const second = (await uploadTo(app, `/v1/products/${b}/images`, admin.auth, bytes)).json()
    assert.equal(first.sha256, second.sha256)
    assert.notEqual(first.id, second.id)
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/products/${a}/images/${first.id}`, headers: admin.auth })).statusCode, 204)
    await app.blobSweep.run()
    assert.ok(await heldAll(second.sha256))
    assert.equal((await app.inject({ method: 'GET', url: `/v1/files/${second.id}` })).statusCode, 200)
  })

  test('the sweep removes bytes no row refers to once they are an hour old, and nothing else', async () => {
    const product = await newProduct()
    const kept = (await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(40, 40, 40))).json()
    const orphan = 'a'.repeat(64)
    const young = 'b'.repeat(64)
    for (const key of [orphan, `${orphan}.thumb`, young]) await store.put(key, Buffer.from(`bytes of ${key}`), 'image/png')
    // Written as if two hours ago (an upload that stopped between its put and its commit).
    const folder = config.files.storage.kind === 'folder' ? config.files.storage.dir : assert.fail('a folder store')
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000)
    for (const key of [orphan, `${orphan}.thumb`, kept.sha256, `${kept.sha256}.thumb`]) await utimes(join(folder, key.slice(0, 2), key.slice(2, 4), key), twoHoursAgo, twoHoursAgo)
    await app.blobSweep.run()
    assert.ok(!await held(orphan) && !await held(`${orphan}.thumb`), 'the old orphan is gone')
    assert.ok(await held(young), 'a young one may be an upload in flight')
    assert.ok(await heldAll(kept.sha256), 'what a row refers to stays, however old')
    assert.equal((await app.inject({ method: 'GET', url: `/v1/files/${kept.id}` })).statusCode, 200)
  })

  test('an upload whose bytes a removal takes between its put and its commit stores them again, and is served whole', async () => {
    const bytes = await pngOf(70, 70, 70)
    const [a, b] = [await newProduct(), await newProduct()]
    const existing = (await uploadTo(app, `/v1/products/${a}/images`, admin.auth, bytes)).json()
    // The second upload of the same bytes is held after its put until the removal of the first
    // file (the last with these bytes) has taken them from the storage.
    const put = store.put
    let release = (): void => {}
    const released = new Promise<void>((resolve) => { release = resolve })
    let puts = 0
    store.put = async (key, source, type) => {
      await put.call(store, key, source, type)
      if (key === existing.sha256 && puts++ === 0) await released
    }
    try {
      const upload = uploadTo(app, `/v1/products/${b}/images`, admin.auth, bytes)
      await eventually(async () => puts === 1, 'the upload has stored its bytes')
      assert.equal((await app.inject({ method: 'DELETE', url: `/v1/products/${a}/images/${existing.id}`, headers: admin.auth })).statusCode, 204)
      await eventually(async () => await goneAll(existing.sha256), 'the removal has taken the bytes')
      release()
      const res = await upload
      assert.equal(res.statusCode, 201, res.body)
      assert.equal(puts, 2, 'the bytes were stored again')
      for (const suffix of ['', '/thumb', '/medium']) {
        assert.equal((await app.inject({ method: 'GET', url: `/v1/files/${res.json().id}${suffix}` })).statusCode, 200, suffix)
      }
      assert.ok(await heldAll(existing.sha256))
    } finally {
      store.put = put
      release()
    }
  })

  test('one sweeper at a time: of two instances sweeping at once, one holds the lease and the other does nothing', async () => {
    const other = new BlobSweep({ db: app.db, store, files: app.files, log: app.log, intervalMs: 600_000, orphanAgeMs: 3_600_000 })
    const results = await Promise.all([app.blobSweep.run(), other.run()])
    assert.equal(results.filter((removed) => removed === undefined).length, 1, `one sweeps, one waits: ${JSON.stringify(results)}`)
    // Released at the end of a sweep: the next one may be either's.
    assert.notEqual(await other.run(), undefined)
  })

  test('uploads of the same bytes racing the removal of their last file: every image answered 201 is served', async () => {
    const bytes = await pngOf(120, 80, 50)
    const products = await Promise.all(Array.from({ length: 5 }, async () => await newProduct()))
    for (let round = 0; round < 4; round++) {
      const existing = (await uploadTo(app, `/v1/products/${products[0]}/images`, admin.auth, bytes)).json()
      const [removal, ...uploads] = await Promise.all([
        app.inject({ method: 'DELETE', url: `/v1/products/${products[0]}/images/${existing.id}`, headers: admin.auth }),
        ...products.slice(1).map(async (product) => await uploadTo(app, `/v1/products/${product}/images`, admin.auth, bytes))
      ])
      assert.equal(removal!.statusCode, 204)
      await app.blobSweep.run()
      for (const [i, upload] of uploads.entries()) {
        assert.equal(upload.statusCode, 201, upload.body)
        for (const suffix of ['', '/thumb', '/medium']) assert.equal((await app.inject({ method: 'GET', url: `/v1/files/${upload.json().id}${suffix}` })).statusCode, 200, `round ${round}${suffix}`)
        assert.equal((await app.inject({ method: 'DELETE', url: `/v1/products/${products[i + 1]}/images/${upload.json().id}`, headers: admin.auth })).statusCode, 204)
      }
    }
  })

  test('each change is its owner\'s event, carrying the representation with its images', async () => {
    const product = await newProduct()
    const image = (await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(20, 10, 60))).json()
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/products/${product}/images/${image.id}`, headers: admin.auth })).statusCode, 204)
    const events: Array<{ type: string, data: { id: number, images: Array<{ id: number, url: string }> } }> = []
    let next: string | undefined = '/v1/events?type=product.updated&limit=100'
    for (let page = 0; next !== undefined && page < 50; page++) {
      const feed: Awaited<ReturnType<typeof app.inject>> = await app.inject({ method: 'GET', url: next, headers: admin.auth })
      assert.equal(feed.statusCode, 200, feed.body)
      events.push(...feed.json())
      next = /<([^>]+)>; rel="next"/.exec(String(feed.headers.link ?? ''))?.[1]?.replace(/^https?:\/\/[^/]+/, '')
    }
    const updates = events.filter((event) => event.data.id === product)
    assert.deepEqual(updates.map((event) => event.data.images.map((shown) => shown.id)), [[image.id], []])
    assert.equal(updates[0]!.data.images[0]!.url, `${config.publicUrl}/v1/files/${image.id}`)
  })
})
