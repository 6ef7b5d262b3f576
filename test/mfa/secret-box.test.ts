import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { chmod, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { SecretBox, SecretUnreadable } from '../../src/mfa/secret-box.js'
import { loadSecretKey, type SecretKeySource } from '../../src/mfa/secret-key.js'

const options = { timeout: 10_000 }
const secret = Buffer.from('12345678901234567890')

function keyOf (source: SecretKeySource): Buffer {
  assert.ok('key' in source, JSON.stringify(source))
  return source.key
}

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32))

  test('a sealed secret opens with the same key and context', options, () => {
    const sealed = box.seal(secret, 'totp:42')
    assert.match(sealed, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)
    assert.ok(!sealed.includes(secret.toString('base64url')))
    assert.deepEqual(box.open(sealed, 'totp:42'), secret)
    assert.deepEqual(box.open(box.seal(Buffer.alloc(0), 'totp:42'), 'totp:42'), Buffer.alloc(0))
  })

  test('each seal differs (a fresh IV each time)', options, () => {
    const sealed = Array.from({ length: 50 }, () => box.seal(secret, 'totp:42'))
    assert.equal(new Set(sealed).size, sealed.length)
    assert.equal(new Set(sealed.map((s) => s.split('.')[1])).size, sealed.length)
  })

  test('another owner, another key, a changed, truncated or unknown value: SecretUnreadable', options, () => {
    const sealed = box.seal(secret, 'totp:42')
    const unreadable = (value: string, context = 'totp:42', by = box): void => {
      assert.throws(() => by.open(value, context), SecretUnreadable, value)
    }
    unreadable(sealed, 'totp:43')
    unreadable(sealed, 'recovery:42')
    unreadable(sealed, 'totp:42', new SecretBox(randomBytes(32)))
    // One byte flipped in the IV, the ciphertext, the tag: each at its first and last byte.
    const [version, ...parts] = sealed.split('.')
    for (let part = 0; part < parts.length; part++) {
      const bytes = Buffer.from(parts[part] ?? '', 'base64url')
      for (const at of [0, bytes.length - 1]) {
        const flipped = Buffer.from(bytes)
        flipped[at] = (flipped[at] ?? 0) ^ 0x01
        const changed = parts.map((p, i) => i === part ? flipped.toString('base64url') : p)
        unreadable([version, ...changed].join('.'))
      }
    }
    unreadable(sealed.slice(0, -1))
    unreadable(sealed.slice(0, -4))
    unreadable(sealed.slice(0, sealed.lastIndexOf('.')))
    unreadable(`${sealed}.`)
    unreadable(`${sealed}=`)
    unreadable(`v2${sealed.slice(2)}`)
    unreadable(sealed.slice(3))
    unreadable('')
    unreadable('v1...')
    // A tag shortened to 12 bytes, which GCM itself would otherwise accept.
    unreadable([version, parts[0], parts[1], Buffer.from(parts[2] ?? '', 'base64url').subarray(0, 12).toString('base64url')].join('.'))
  })

  test('a key of another length is refused', options, () => {
    assert.throws(() => new SecretBox(randomBytes(16)), /32 bytes/)
  })
})

describe('loadSecretKey', () => {
  const folders: string[] = []
  after(async () => { await Promise.all(folders.map((f) => rm(f, { recursive: true, force: true }))) })
  async function scratch (): Promise<string> {
    const folder = await mkdtemp(join(tmpdir(), 'secret-key-'))
    folders.push(folder)
    return folder
  }

  test('without SECRET_KEY on SQLite: a key file beside the database, mode 0600 in a 0700 folder, reused', options, async () => {
    const data = join(await scratch(), 'data')
    const config = { secretKey: undefined, databaseUrl: `file:${join(data, 'app.db')}` }
    const key = keyOf(await loadSecretKey(config))
    assert.equal(key.length, 32)
    const file = join(data, 'secret.key')
    assert.equal((await stat(file)).mode & 0o777, 0o600)
    assert.equal((await stat(data)).mode & 0o077, 0)
    assert.equal(await readFile(file, 'utf8'), `${key.toString('hex')}\n`)
    assert.deepEqual(keyOf(await loadSecretKey(config)), key)
    assert.deepEqual(await readdir(data), ['secret.key'])
  })

  test('ten first calls at once end with one key', options, async () => {
    const folder = await scratch()
    const config = { secretKey: undefined, databaseUrl: `file:${join(folder, 'app.db')}` }
    const keys = (await Promise.all(Array.from({ length: 10 }, async () => await loadSecretKey(config)))).map(keyOf)
    for (const key of keys) assert.deepEqual(key, keys[0])
    assert.equal(await readFile(join(folder, 'secret.key'), 'utf8'), `${keys[0]?.toString('hex')}\n`)
    assert.deepEqual(await readdir(folder), ['secret.key'])
  })

  test('a key file with bad content or open to others is refused, naming the file', options, async () => {
    const folder = await scratch()
    const file = join(folder, 'secret.key')
    const config = { secretKey: undefined, databaseUrl: `file:${join(folder, 'app.db')}` }
    const good = randomBytes(32).toString('hex')
    for (const [content, mode] of [['not a key\n', 0o600], [good.slice(2), 0o600], [`${good}\n\n`, 0o600], [good, 0o644], [good, 0o640]] as const) {
      await writeFile(file, content)
      await chmod(file, mode)
      await assert.rejects(loadSecretKey(config), (error: Error) => error.message.includes(file) && !error.message.includes(good.slice(2)), `${content} ${mode.toString(8)}`)
      // Never overwritten.
      assert.equal(await readFile(file, 'utf8'), content)
    }
    await writeFile(file, good)
    await chmod(file, 0o400)
    assert.equal(keyOf(await loadSecretKey(config)).toString('hex'), good)
  })

  test('SECRET_KEY wins over the file; PostgreSQL without it has no key', options, async () => {
    const folder = await scratch()
    const secretKey = randomBytes(32)
    const databaseUrl = `file:${join(folder, 'app.db')}`
    assert.deepEqual(keyOf(await loadSecretKey({ secretKey, databaseUrl })), secretKey)
    assert.deepEqual(await readdir(folder), [], 'no key file made when SECRET_KEY is set')
    const fileKey = keyOf(await loadSecretKey({ secretKey: undefined, databaseUrl }))
    assert.notDeepEqual(fileKey, secretKey)
    assert.deepEqual(keyOf(await loadSecretKey({ secretKey, databaseUrl })), secretKey)
    assert.deepEqual(keyOf(await loadSecretKey({ secretKey, databaseUrl: 'postgres://u:p@db:5432/app' })), secretKey)
    const source = await loadSecretKey({ secretKey: undefined, databaseUrl: 'postgres://u:p@db:5432/app' })
    assert.ok('unavailable' in source)
    assert.match(source.unavailable, /^SECRET_KEY is not set: /)
  })
})
