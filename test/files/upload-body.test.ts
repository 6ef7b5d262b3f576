import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { after, describe, test } from 'node:test'
import type { FastifyRequest } from 'fastify'
import { ApiError } from '../../src/http/errors.js'
import { receiveUpload } from '../../src/files/upload-body.js'
import { form } from './support.js'

// An upload's body to a file, in pieces: whole, cut off past the limit, or ended by the client
// going away, which is the client's failure (400 on `file`), never the service's (a 500).

const dir = mkdtempSync(join(tmpdir(), 'upload-body-'))
after(() => { rmSync(dir, { recursive: true, force: true }) })
let n = 0
const path = (): string => join(dir, `upload-${n++}`)
const request = (contentType: string): FastifyRequest => ({ headers: { 'content-type': contentType } }) as unknown as FastifyRequest

/** A body that sends its pieces, then fails as a socket reset by the client does. */
function abandoned (pieces: Buffer[]): Readable {
  let i = 0
  return new Readable({
    read () {
      if (i < pieces.length) this.push(pieces[i++])
      else this.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
    }
  })
}

const isCutOff = (error: unknown): boolean => error instanceof ApiError && error.code === 'VALIDATION_ERROR' && error.errors?.[0]?.field === 'file' && /not received whole/.test(error.errors[0].message)

describe('an upload\'s body', { timeout: 10_000 }, () => {
  test('whole: written to the file, its size and declared type given', async () => {
    const target = path()
    const received = await receiveUpload(request('image/png'), Readable.from([Buffer.from('abc'), Buffer.from('def')]), target, 100)
    assert.deepEqual(received, { size: 6, declared: 'image/png' })
    assert.equal(readFileSync(target, 'utf8'), 'abcdef')
  })

  test('past the limit: 413, read no further', async () => {
    let pulled = 0
    const endless = new Readable({ read () { pulled++; this.push(Buffer.alloc(1000)) } })
    await assert.rejects(receiveUpload(request('image/png'), endless, path(), 5000), (error: unknown) => error instanceof ApiError && error.code === 'PAYLOAD_TOO_LARGE')
    assert.ok(pulled < 20, `${pulled} pieces read`)
    assert.equal(endless.destroyed, false, 'the request is left to carry the answer')
  })

  test('the client gone mid-body, raw or in a form: 400 on file, not a failure of the service', async () => {
    await assert.rejects(receiveUpload(request('image/png'), abandoned([Buffer.alloc(5000, 1)]), path(), 100_000), isCutOff)
    const { payload, contentType } = form([{ name: 'file', filename: 'a.png', type: 'image/png', body: Buffer.alloc(20_000, 2) }])
    await assert.rejects(receiveUpload(request(contentType), abandoned([payload.subarray(0, 10_000)]), path(), 100_000), isCutOff)
  })
})
