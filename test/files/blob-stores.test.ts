import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { buffer } from 'node:stream/consumers'
import type { Readable } from 'node:stream'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { BlobStore } from '../../src/files/blob-store.js'
import { FolderStore } from '../../src/files/folder-store.js'
import { S3Store, s3Location } from '../../src/files/s3-store.js'
import { BUCKET, startS3Store, startSigningS3Store, type S3Store as S3Server } from '../support/s3-store.js'

// The two stores of uploaded files, held to one contract: the folder (the embedded default) and
// S3, against S3 API servers on loopback: fauxqs, which can be stopped and started again, and
// s3rver, which checks request signatures.

const keyOf = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')
// A read's body: a stream, or (a few bytes of known size, from the folder) a buffer.
const bytesOf = async (body: Readable | Buffer): Promise<Buffer> => Buffer.isBuffer(body) ? body : await buffer(body)
const text = async (body: Readable | Buffer): Promise<string> => (await bytesOf(body)).toString()
const all = async (store: BlobStore): Promise<string[]> => { const keys = []; for await (const blob of store.list()) keys.push(blob.key); return keys.sort() }

function theContract (name: string, open: () => Promise<BlobStore>): void {
  describe(`${name}: the contract of a store`, { timeout: 60_000 }, () => {
    let store: BlobStore
    before(async () => { store = await open() })
    after(async () => { await store.close() })

    test('a put is read back whole and by range; its size is known', async () => {
      const bytes = Buffer.from('0123456789abcdef')
      const key = keyOf(bytes)
      await store.put(key, bytes, 'image/png')
      assert.equal(await store.size(key), 16)
      const whole = await store.read(key)
      assert.equal(whole?.size, 16)
      assert.equal(await text(whole!.body), '0123456789abcdef')
      const part = await store.read(key, { start: 2, end: 5 })
      assert.equal(part?.size, 16, 'the whole size, not the range\'s')
      assert.equal(await text(part!.body), '2345')
    })

    test('with the size known (a file\'s row holds it): the same bytes, whole and by range, small and large', async () => {
      for (const bytes of [Buffer.from('a few bytes of known size'), Buffer.alloc(300_000, 'large enough to stream')]) {
        const key = keyOf(bytes)
        await store.put(key, bytes, 'image/png')
        const whole = await store.read(key, undefined, bytes.length)
        assert.equal(whole?.size, bytes.length)
        assert.ok((await bytesOf(whole!.body)).equals(bytes))
        const part = await store.read(key, { start: 3, end: bytes.length - 2 }, bytes.length)
        assert.equal(part?.size, bytes.length)
        assert.ok((await bytesOf(part!.body)).equals(bytes.subarray(3, bytes.length - 1)))
        assert.equal(await store.read(keyOf(Buffer.from(`not ${bytes.length}`)), undefined, 10), undefined)
        await store.remove(key)
      }
    })

    test('the same key twice at once is one blob; a variant key beside it', async () => {
      const bytes = Buffer.from('same bytes')
      const key = keyOf(bytes)
      await Promise.all([store.put(key, bytes, 'image/png'), store.put(key, bytes, 'image/png')])
      await store.put(`${key}.thumb`, Buffer.from('small'), 'image/webp')
      const keys = await all(store)
      assert.equal(keys.filter((k) => k === key).length, 1)
      assert.ok(keys.includes(`${key}.thumb`))
    })

    test('a file is stored from its path, as its bytes would be', async () => {
      const folder = mkdtempSync(join(tmpdir(), 'blob-source-'))
      try {
        const bytes = Buffer.alloc(300_000, 'from a file')
        writeFileSync(join(folder, 'original'), bytes)
        await store.put(keyOf(bytes), join(folder, 'original'), 'image/png')
        assert.equal(await store.size(keyOf(bytes)), 300_000)
        assert.ok((await bytesOf((await store.read(keyOf(bytes)))!.body)).equals(bytes))
        await store.remove(keyOf(bytes))
      } finally {
        rmSync(folder, { recursive: true, force: true })
      }
    })

    test('an unknown key reads as nothing; removing it is not an error; a removed blob is gone', async () => {
      const missing = keyOf(Buffer.from('never stored'))
      assert.equal(await store.read(missing), undefined)
      assert.equal(await store.size(missing), undefined)
      await store.remove(missing)
      const bytes = Buffer.from('to be removed')
      await store.put(keyOf(bytes), bytes, 'image/gif')
      await store.remove(keyOf(bytes))
      assert.equal(await store.size(keyOf(bytes)), undefined)
      assert.ok(!(await all(store)).includes(keyOf(bytes)))
    })

    test('a key that is not a content address is refused before any path or object name is made of it', async () => {
      for (const key of ['../../etc/passwd', 'ab', `${'a'.repeat(64)}.large`, 'A'.repeat(64), `${'a'.repeat(64)}/x`, '']) {
        await assert.rejects(store.put(key, Buffer.from('x'), 'image/png'), /not a blob key/, key)
        await assert.rejects(store.read(key), /not a blob key/, key)
        await assert.rejects(store.remove(key), /not a blob key/, key)
      }
    })

    test('the listing names every blob with the time it was written, and nothing else', async () => {
      const listed = []
      for await (const blob of store.list()) listed.push(blob)
      assert.deepEqual(listed.map((b) => b.key).sort(), [keyOf(Buffer.from('0123456789abcdef')), keyOf(Buffer.from('same bytes')), `${keyOf(Buffer.from('same bytes'))}.thumb`].sort())
      for (const blob of listed) assert.ok(blob.modified instanceof Date && Math.abs(Date.now() - blob.modified.getTime()) < 120_000, `${blob.key}: ${blob.modified.toISOString()}`)
    })
  })
}

const root = mkdtempSync(join(tmpdir(), 'api-blob-stores-'))
after(() => { rmSync(root, { recursive: true, force: true }) })

theContract('a folder', async () => new FolderStore(join(root, 'files')))

describe('a folder: on disk', { timeout: 30_000 }, () => {
  test('each blob under two folders of its key, no temporary file left; a folder not made yet lists nothing', async () => {
    const store: BlobStore = new FolderStore(join(root, 'disk'))
    const bytes = Buffer.from('on disk')
    const key = keyOf(bytes)
    await store.put(key, bytes, 'image/png')
    assert.deepEqual(readdirSync(join(root, 'disk', key.slice(0, 2), key.slice(2, 4))), [key])
    assert.deepEqual(await all(new FolderStore(join(root, 'not-made-yet'))), [])
    assert.equal(existsSync(join(root, 'etc')), false)
  })

  test('a blob shorter than its row says fails the read, read whole or streamed, rather than sending what is there and more', async () => {
    const store: BlobStore = new FolderStore(join(root, 'short'))
    const bytes = Buffer.from('eleven bytes')
    await store.put(keyOf(bytes), bytes, 'image/png')
    await assert.rejects(store.read(keyOf(bytes), undefined, bytes.length + 1), /12 bytes where 13 were expected/)
    assert.ok((await bytesOf((await store.read(keyOf(bytes), undefined, bytes.length))!.body)).equals(bytes))
    // Past the size read whole into memory: streamed, the same refusal, whole or by range.
    const large = Buffer.alloc(300 * 1024, 7)
    await store.put(keyOf(large), large, 'image/png')
    await assert.rejects(store.read(keyOf(large), undefined, large.length + 1), new RegExp(`${large.length} bytes where ${large.length + 1} were expected`))
    await assert.rejects(store.read(keyOf(large), { start: 0, end: large.length }, large.length + 1), new RegExp(`${large.length} bytes where ${large.length + 1} were expected`))
    assert.equal((await bytesOf((await store.read(keyOf(large), { start: 1, end: large.length - 1 }, large.length))!.body)).length, large.length - 1)
  })
})

/** STORAGE_TIMEOUT_MS's default. */
const TIMEOUT_MS = 10_000
let fauxqs: S3Server
let s3rver: S3Server
before(async () => {
  fauxqs = await startS3Store()
  s3rver = await startSigningS3Store()
})
after(async () => {
  await fauxqs?.remove()
  await s3rver?.remove()
})

theContract('S3 (a prefix in a bucket)', async () => await S3Store.open(s3Location(new URL(`s3://${BUCKET}/files/of/the-shop`)), fauxqs.env, TIMEOUT_MS))
theContract('S3 (the bucket\'s root)', async () => await S3Store.open(s3Location(new URL(`s3://${BUCKET}`)), fauxqs.env, TIMEOUT_MS))

describe('S3: refusals and outages', { timeout: 60_000 }, () => {
  // s3rver checks signatures (fauxqs takes any), but not its own listing's: it refuses the
  // SDK's signed ListObjectsV2 whatever the credentials, so the listing is fauxqs's alone.
  test('signed requests: the right credentials put, read and remove; wrong ones are refused, nothing stored', async () => {
    const right = await S3Store.open(s3Location(new URL(`s3://${BUCKET}/signed`)), s3rver.env, TIMEOUT_MS)
    const kept = Buffer.from('signed and kept')
    await right.put(keyOf(kept), kept, 'image/png')
    assert.equal(await text((await right.read(keyOf(kept), { start: 0, end: 5 }))!.body), 'signed')
    assert.equal(await right.size(keyOf(kept)), kept.length)
    await right.remove(keyOf(kept))
    assert.equal(await right.size(keyOf(kept)), undefined)

    const store = await S3Store.open(s3Location(new URL(`s3://${BUCKET}/signed`)), { ...s3rver.env, AWS_SECRET_ACCESS_KEY: 'not-the-secret' }, TIMEOUT_MS)
    const bytes = Buffer.from('refused')
    await assert.rejects(store.put(keyOf(bytes), bytes, 'image/png'), /SignatureDoesNotMatch|signature/i)
    await assert.rejects(store.read(keyOf(bytes)), /SignatureDoesNotMatch|signature|Forbidden|403/i)
    await assert.rejects(store.remove(keyOf(bytes)), /SignatureDoesNotMatch|signature/i)
    await store.close()
    assert.equal(await right.size(keyOf(bytes)), undefined)
    await right.close()
  })

  test('the store down: a put fails (nothing half-kept); back on the same port: it works again', async () => {
    const store = await S3Store.open(s3Location(new URL(`s3://${BUCKET}/outage`)), fauxqs.env, TIMEOUT_MS)
    const bytes = Buffer.from('while down')
    await fauxqs.stop()
    try {
      await assert.rejects(store.put(keyOf(bytes), bytes, 'image/png'))
    } finally {
      await fauxqs.start()
    }
    assert.equal(await store.size(keyOf(bytes)), undefined)
    await store.put(keyOf(bytes), bytes, 'image/png')
    assert.equal(await store.size(keyOf(bytes)), bytes.length)
    await store.close()
  })

  test('a store that takes the connection and never answers: a put, a read and a size each fail (every attempt bounded), nothing waits for ever', { timeout: 20_000 }, async () => {
    const held: Socket[] = []
    const silent = createServer((socket) => { held.push(socket) })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = silent.address() as AddressInfo
      const store = await S3Store.open(s3Location(new URL(`s3://${BUCKET}/silent`)), { ...fauxqs.env, AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}` }, 300)
      const bytes = Buffer.from('never answered')
      await assert.rejects(store.put(keyOf(bytes), bytes, 'image/png'), /timed? ?out|socket|ECONNRESET/i)
      await assert.rejects(store.read(keyOf(bytes)), /did not answer within 300 ms/)
      await assert.rejects(store.size(keyOf(bytes)), /timed? ?out|socket|ECONNRESET/i)
      assert.ok(held.length >= 3, `the store was asked (${held.length} connections)`)
      await store.close()
    } finally {
      for (const socket of held) socket.destroy()
      await new Promise((resolve) => silent.close(resolve))
    }
  })

  test('a read\'s body goes at its reader\'s pace: paused far longer than the bound, it is not cut off', async () => {
    const store = await S3Store.open(s3Location(new URL(`s3://${BUCKET}/paced`)), fauxqs.env, 300)
    // Larger than what the sockets' buffers hold between the store and this process, so that
    // the store's connection goes quiet while the reader waits.
    const bytes = Buffer.alloc(10 * 1024 * 1024, 7)
    const key = keyOf(bytes)
    await store.put(key, bytes, 'image/png')
    const read = (await store.read(key))!
    assert.equal(read.size, bytes.length)
    const body = read.body as Readable
    let received = 0
    for await (const chunk of body) {
      if (received === 0) await new Promise((resolve) => setTimeout(resolve, 1500))
      received += (chunk as Buffer).length
    }
    assert.equal(received, bytes.length)
    await store.remove(key)
    await store.close()
  })

  test('the location of an s3:// URL: the bucket, and the prefix without slashes around it', () => {
    assert.deepEqual(s3Location(new URL('s3://shop-files')), { bucket: 'shop-files', prefix: '' })
    assert.deepEqual(s3Location(new URL('s3://shop-files/')), { bucket: 'shop-files', prefix: '' })
    assert.deepEqual(s3Location(new URL('s3://shop-files/a/b/')), { bucket: 'shop-files', prefix: 'a/b' })
  })
})
