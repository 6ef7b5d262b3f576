import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, describe, test } from 'node:test'
import sharp from 'sharp'
import { assertError, buildTestApp, createAdmin, createUser } from '../helper.js'
import { validProduct } from '../products/fixtures.js'
import { createPost } from '../posts/fixtures.js'
import { eventually, form, pngClaiming, pngOf, uploadTo } from './support.js'

// What an upload must be: every refusal with its status, code and fields, the hostile files among
// them, and nothing of a refused upload kept. A small FILE_MAX_BYTES keeps the size cases quick.

const MAX = 200_000
const { app, url, close } = await buildTestApp({ FILE_MAX_BYTES: String(MAX) })
after(close)
const admin = await createAdmin(app)
const alice = await createUser(app, { name: 'Alice' })
const bob = await createUser(app, { name: 'Bob' })

async function newProduct (): Promise<number> {
  const res = await app.inject({ method: 'POST', url: '/v1/products', headers: admin.auth, payload: validProduct() })
  assert.equal(res.statusCode, 201)
  return res.json().id
}

const images = async (productId: number): Promise<unknown[]> => (await app.inject({ method: 'GET', url: `/v1/products/${productId}` })).json().images

/** Every blob in the app's storage. */
async function stored (): Promise<string[]> {
  const keys = []
  for await (const blob of app.files.store.list()) keys.push(blob.key)
  return keys.sort()
}

describe('what an upload must be', { timeout: 120_000 }, () => {
  test('the five types are taken by their bytes, each kept in its own format', async () => {
    const product = await newProduct()
    const base = sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 1, g: 2, b: 3 } } })
    const made = {
      'image/jpeg': await base.clone().jpeg().toBuffer(),
      'image/png': await base.clone().png().toBuffer(),
      'image/webp': await base.clone().webp().toBuffer(),
      'image/gif': await base.clone().gif().toBuffer(),
      'image/avif': await base.clone().avif({ effort: 0 }).toBuffer()
    }
    for (const [type, bytes] of Object.entries(made)) {
      // Declared rightly, or not at all (application/octet-stream): the bytes decide.
      const res = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, bytes, type === 'image/gif' ? 'application/octet-stream' : type)
      assert.equal(res.statusCode, 201, `${type}: ${res.body}`)
      assert.equal(res.json().contentType, type)
      assert.deepEqual([res.json().width, res.json().height], [64, 48], type)
    }
    assert.equal((await images(product)).length, 5)
  })

  test('hostile files are 415 UNSUPPORTED_MEDIA_TYPE and leave nothing: SVG with script, HTML, PDF, polyglots, a PNG signature on junk, a declared type that lies', async () => {
    const product = await newProduct()
    const before = await stored()
    const png = await pngOf(40, 30, 1)
    const hostile: Record<string, [Buffer, string]> = {
      'SVG with script': [Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(1)</script></svg>'), 'image/svg+xml'],
      'SVG sent as PNG': [Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), 'image/png'],
      HTML: [Buffer.from('<!doctype html><html><script>alert(1)</script></html>'), 'image/png'],
      PDF: [Buffer.from('%PDF-1.7\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF'), 'image/jpeg'],
      'a PNG with HTML inside': [Buffer.concat([png, Buffer.from('<html><script>alert(document.cookie)</script></html>')]), 'image/png'],
      'a GIF that is also a PDF': [Buffer.concat([Buffer.from('GIF89a'), Buffer.from('%PDF-1.4 ')]), 'image/gif'],
      'a PNG signature on junk': [Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(4000, 0x41)]), 'image/png'],
      'a truncated JPEG': [(await sharp(png).jpeg().toBuffer()).subarray(0, 120), 'image/jpeg'],
      'a PNG declared as JPEG': [png, 'image/jpeg'],
      'a PNG declared as WebP': [png, 'image/webp']
    }
    for (const [name, [bytes, type]] of Object.entries(hostile)) {
      const res = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, bytes, type)
      assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE')
      assert.ok(!res.body.includes('<script'), name)
    }
    assert.deepEqual(await images(product), [])
    // The refused PNGs were stored before their declared type was judged: gone again.
    await eventually(async () => JSON.stringify(await stored()) === JSON.stringify(before), 'the refused uploads\' bytes removed')
  })

  test('a JPEG with GPS, a camera and orientation 6: served upright, with no EXIF at all', async () => {
    const product = await newProduct()
    const photo = await sharp({ create: { width: 300, height: 100, channels: 3, background: { r: 200, g: 40, b: 20 } } })
      .withMetadata({ orientation: 6 })
      .withExif({ IFD0: { Make: 'TestCam', Model: 'Serial123' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 2413/100', GPSLongitudeRef: 'E', GPSLongitude: '2/1 17/1 4019/100' } })
      .jpeg().toBuffer()
    assert.ok(photo.includes('TestCam'))
    const res = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, photo, 'image/jpeg')
    assert.equal(res.statusCode, 201, res.body)
    const image = res.json()
    assert.deepEqual([image.width, image.height], [100, 300])
    for (const address of [`/v1/files/${image.id}`, `/v1/files/${image.id}/medium`, `/v1/files/${image.id}/thumb`]) {
      const served = await app.inject({ method: 'GET', url: address })
      assert.equal(served.statusCode, 200)
      const meta = await sharp(served.rawPayload).metadata()
      assert.equal(meta.exif, undefined, address)
      assert.ok(meta.orientation === undefined || meta.orientation === 1, address)
      assert.ok(meta.height! > meta.width!, `${address} is upright`)
      assert.ok(!served.rawPayload.includes('TestCam') && !served.rawPayload.includes('Serial123'), address)
    }
  })

  test('size: a header claiming 30,000 × 30,000 pixels, a side past 8,000, a Content-Length past FILE_MAX_BYTES: 413', async () => {
    const product = await newProduct()
    const bomb = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, pngClaiming(30_000, 30_000))
    assertError(bomb, 413, 'PAYLOAD_TOO_LARGE')
    assert.match(bomb.json().message, /30000 × 30000/)
    assertError(await uploadTo(app, `/v1/products/${product}/images`, admin.auth, pngClaiming(8001, 10)), 413, 'PAYLOAD_TOO_LARGE')
    assertError(await uploadTo(app, `/v1/products/${product}/images`, admin.auth, Buffer.alloc(MAX + 1, 1)), 413, 'PAYLOAD_TOO_LARGE')
    assert.deepEqual(await images(product), [])
  })

  test('over HTTP: a Content-Length past the limit is 413 before a byte of the body is sent; a body that grows past it is cut off with 413; one that never ends is 408', async () => {
    const product = await newProduct()
    const { hostname: host, port } = new URL(await url())
    const exchange = async (head: string, body: (write: (chunk: Buffer, next: () => void) => void) => void, onAnswer = (): void => {}): Promise<string> => await new Promise((resolve, reject) => {
      const socket = connect(Number(port), host)
      let answer = ''
      const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no answer: ${answer}`)) }, 15_000)
      socket.on('data', (data) => { if (answer === '') onAnswer(); answer += data.toString('latin1') })
      socket.on('error', () => {})
      socket.on('close', () => { clearTimeout(timer); resolve(answer) })
      socket.write(head)
      // Until the server closes (a write after that would fail the test, not the server), as fast as the server reads.
      body((chunk, next) => {
        if (socket.destroyed || !socket.writable) return
        if (socket.write(chunk)) setImmediate(next)
        else socket.once('drain', next)
      })
    })
    const request = `POST /v1/products/${product}/images HTTP/1.1\r\nHost: ${host}\r\nAuthorization: ${admin.auth.authorization}\r\nContent-Type: image/png\r\n`
    // No byte of the body is ever sent: the answer comes from the headers alone, and the connection closes.
    const declared = await exchange(`${request}Content-Length: ${MAX * 10}\r\n\r\n`, () => {})
    assert.match(declared, /^HTTP\/1\.1 413 /, "declared")
    assert.match(declared, /"code":"PAYLOAD_TOO_LARGE"/)
    assert.match(declared, /connection: close/i)
    // Chunked, with no length: cut off once past the limit, though the client would go on (the
    // answer comes while it is still sending; the server then reads on a bounded while, so that
    // the client sees the answer, and closes: lingering-close.ts).
    const WOULD_SEND = MAX * 200
    let sent = 0
    let sentWhenAnswered: number | undefined
    const grown = await exchange(`${request}Transfer-Encoding: chunked\r\n\r\n`, (write) => {
      const piece = Buffer.alloc(16_384, 7)
      const more = (): void => {
        if (sent > WOULD_SEND) return
        sent += piece.length
        write(Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]), more)
      }
      more()
    }, () => { sentWhenAnswered = sent })
    assert.match(grown, /^HTTP\/1\.1 413 /, `grown, sent ${sent}`)
    assert.match(grown, /"code":"PAYLOAD_TOO_LARGE"/)
    assert.ok(sentWhenAnswered !== undefined && sentWhenAnswered < WOULD_SEND && sent < WOULD_SEND, `answered after ${sentWhenAnswered} bytes sent, closed after ${sent}`)

    // A body that never ends (a little at a time, never past the limit): 408 once the request's
    // time is up, shortened here to 1.5 s (its value is checked with the other limits).
    app.server.headersTimeout = 1000
    app.server.requestTimeout = 1500
    try {
      // A byte at a time until the server answers (the exchange's own time limit bounds the test).
      let trickled = 0
      let answered = false
      const endless = await exchange(`${request}Transfer-Encoding: chunked\r\n\r\n`, (write) => {
        const more = (): void => {
          if (answered) return
          trickled++
          write(Buffer.from('1\r\nx\r\n'), () => { setTimeout(more, 100) })
        }
        more()
      }, () => { answered = true })
      assert.match(endless, /^HTTP\/1\.1 408 /)
      assert.match(endless, /"code":"REQUEST_TIMEOUT"/)
      assert.ok(trickled > 3, `the body was still arriving (${trickled} pieces) when the time ran out`)
    } finally {
      app.server.headersTimeout = 10_000
      app.server.requestTimeout = 30_000
    }
    assert.deepEqual(await images(product), [])
    assert.equal((await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(10, 10, 9))).statusCode, 201, 'and the next upload is taken')
  })

  test('no body, an empty body, an unknown media type: 400 on file, 415, 415', async () => {
    const product = await newProduct()
    assertError(await app.inject({ method: 'POST', url: `/v1/products/${product}/images`, headers: admin.auth }), 400, 'VALIDATION_ERROR', ['file'])
    assertError(await uploadTo(app, `/v1/products/${product}/images`, admin.auth, Buffer.alloc(0)), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await uploadTo(app, `/v1/products/${product}/images`, admin.auth, Buffer.from('{"file":1}'), 'application/json'), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await uploadTo(app, `/v1/products/${product}/images`, admin.auth, Buffer.from('hello'), 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE')
  })

  test('multipart/form-data: one part named file is taken; a field, two files, another name, no part, a part that lies: refused', async () => {
    const product = await newProduct()
    const png = await pngOf(30, 20, 2)
    const send = async (parts: Parameters<typeof form>[0]) => { const f = form(parts); return await uploadTo(app, `/v1/products/${product}/images`, admin.auth, f.payload, f.contentType) }
    const taken = await send([{ name: 'file', filename: 'photo.png', type: 'image/png', body: png }])
    assert.equal(taken.statusCode, 201, taken.body)
    assert.equal(taken.json().contentType, 'image/png')
    assertError(await send([{ name: 'caption', body: 'hello' }, { name: 'file', filename: 'a.png', type: 'image/png', body: png }]), 400, 'VALIDATION_ERROR', ['file'])
    assertError(await send([{ name: 'file', filename: 'a.png', type: 'image/png', body: png }, { name: 'file', filename: 'b.png', type: 'image/png', body: png }]), 400, 'VALIDATION_ERROR', ['file'])
    assertError(await send([{ name: 'picture', filename: 'a.png', type: 'image/png', body: png }]), 400, 'VALIDATION_ERROR', ['file'])
    assertError(await send([]), 400, 'VALIDATION_ERROR', ['file'])
    assertError(await send([{ name: 'file', filename: 'a.jpg', type: 'image/jpeg', body: png }]), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await send([{ name: 'file', filename: 'x.svg', type: 'image/svg+xml', body: '<svg><script>alert(1)</script></svg>' }]), 415, 'UNSUPPORTED_MEDIA_TYPE')
    assertError(await uploadTo(app, `/v1/products/${product}/images`, admin.auth, Buffer.from('no boundary'), 'multipart/form-data'), 400, 'VALIDATION_ERROR', ['file'])
    assertError(await send([{ name: 'file', filename: 'big.png', type: 'image/png', body: Buffer.alloc(MAX + 1, 3) }]), 413, 'PAYLOAD_TOO_LARGE')
    assert.equal((await images(product)).length, 1)
  })

  test('wrong ids and the other user\'s post: 400 on id, 404, 403; ids of images that are not the resource\'s: 404 FILE_NOT_FOUND', async () => {
    const png = await pngOf(20, 20, 3)
    assertError(await uploadTo(app, '/v1/products/abc/images', admin.auth, png), 400, 'VALIDATION_ERROR', ['id'])
    assertError(await uploadTo(app, '/v1/posts/999999/images', alice.auth, png), 404, 'POST_NOT_FOUND')
    const post = await createPost(app, alice)
    assertError(await uploadTo(app, `/v1/posts/${post.id}/images`, bob.auth, png), 403, 'FORBIDDEN_POST_ACCESS')
    const mine = await uploadTo(app, `/v1/posts/${post.id}/images`, alice.auth, png)
    assert.equal(mine.statusCode, 201, mine.body)
    const product = await newProduct()
    const other = await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(20, 20, 4))
    // The product's image is not the post's: the post's author cannot remove it through the post.
    assertError(await app.inject({ method: 'DELETE', url: `/v1/posts/${post.id}/images/${other.json().id}`, headers: alice.auth }), 404, 'FILE_NOT_FOUND')
    assertError(await app.inject({ method: 'DELETE', url: `/v1/posts/${post.id}/images/${mine.json().id}`, headers: bob.auth }), 403, 'FORBIDDEN_POST_ACCESS')
    assertError(await app.inject({ method: 'DELETE', url: `/v1/posts/${post.id}/images/x`, headers: alice.auth }), 400, 'VALIDATION_ERROR', ['imageId'])
    assertError(await app.inject({ method: 'GET', url: '/v1/files/0' }), 400, 'VALIDATION_ERROR', ['fileId'])
    assertError(await app.inject({ method: 'GET', url: `/v1/files/${mine.json().id}/large` }), 400, 'VALIDATION_ERROR', ['variant'])
    assertError(await app.inject({ method: 'GET', url: '/v1/files/987654' }), 404, 'FILE_NOT_FOUND')
  })

  test('a product holds 10 images: the eleventh is 409 TOO_MANY_IMAGES, and nothing of it is kept', async () => {
    const product = await newProduct()
    for (let i = 0; i < 10; i++) assert.equal((await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(16, 16, 100 + i))).statusCode, 201)
    assertError(await uploadTo(app, `/v1/products/${product}/images`, admin.auth, await pngOf(16, 16, 111)), 409, 'TOO_MANY_IMAGES')
    const shown = await images(product) as Array<{ id: number }>
    assert.equal(shown.length, 10)
    assert.deepEqual(shown.map((image) => image.id), [...shown.map((image) => image.id)].sort((a, b) => a - b), 'oldest first')
  })

  test('10 uploads at once to one post all land; the post shows the 10', async () => {
    const post = await createPost(app, alice)
    const answers = await Promise.all(Array.from({ length: 10 }, async (_, i) => await uploadTo(app, `/v1/posts/${post.id}/images`, alice.auth, await pngOf(400, 300, 200 + i))))
    assert.deepEqual(answers.map((res) => res.statusCode), Array(10).fill(201))
    const shown = (await app.inject({ method: 'GET', url: `/v1/posts/${post.id}` })).json().images as Array<{ id: number }>
    assert.deepEqual(shown.map((image) => image.id).sort(), answers.map((res) => res.json().id).sort())
  })
})
