import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { text } from 'node:stream/consumers'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import type { BlobStore } from '../../src/files/blob-store.js'
import { FolderStore } from '../../src/files/folder-store.js'

const keyOf = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

describe('the folder store', { timeout: 30_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'api-folder-store-'))
  after(() => { rmSync(root, { recursive: true, force: true }) })
  const store: BlobStore = new FolderStore(join(root, 'files'))

  test('a put is read back whole and by range, under two folders of the key, with no temporary file left', async () => {
    const bytes = Buffer.from('0123456789abcdef')
    const key = keyOf(bytes)
    await store.put(key, bytes, 'image/png')
    assert.equal(await store.size(key), 16)
    const whole = await store.read(key)
    assert.equal(whole?.size, 16)
    assert.equal(await text(whole!.body), '0123456789abcdef')
    const part = await store.read(key, { start: 2, end: 5 })
    assert.equal(await text(part!.body), '2345')
    const folder = join(root, 'files', key.slice(0, 2), key.slice(2, 4))
    assert.deepEqual(readdirSync(folder), [key])
  })

  test('the same key twice is stored once; a variant key beside it', async () => {
    const bytes = Buffer.from('same bytes')
    const key = keyOf(bytes)
    await Promise.all([store.put(key, bytes, 'image/png'), store.put(key, bytes, 'image/png')])
    await store.put(`${key}.thumb`, Buffer.from('small'), 'image/webp')
    const folder = join(root, 'files', key.slice(0, 2), key.slice(2, 4))
    assert.deepEqual(readdirSync(folder).sort(), [key, `${key}.thumb`])
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
  })

  test('a key that is not a content address is refused before any path is made of it', async () => {
    for (const key of ['../../etc/passwd', 'ab', `${'a'.repeat(64)}.large`, `${'A'.repeat(64)}`, `${'a'.repeat(64)}/x`]) {
      await assert.rejects(store.put(key, Buffer.from('x'), 'image/png'), /not a blob key/)
      await assert.rejects(store.read(key), /not a blob key/)
    }
    assert.equal(existsSync(join(root, 'etc')), false)
  })

  test('the listing names every blob, with its time, and nothing else', async () => {
    const listed = []
    for await (const blob of store.list()) listed.push(blob)
    const keys = listed.map((b) => b.key).sort()
    assert.equal(keys.length, 3)
    for (const blob of listed) assert.ok(blob.modified instanceof Date && Date.now() - blob.modified.getTime() < 60_000)
    const empty = new FolderStore(join(root, 'not-made-yet'))
    for await (const blob of empty.list()) assert.fail(`listed ${blob.key}`)
  })
})
