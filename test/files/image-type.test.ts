import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { imageType, signatureType, TypeScan } from '../../src/files/image-type.js'

// The type of an upload from its bytes alone. Signatures here are written by hand; the image
// processing tests send real images of each type made by the encoder.

const bytes = (...parts: Array<string | number[] | Buffer>): Buffer => Buffer.concat(parts.map((p) => typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p)))
const ftyp = (major: string, ...compatible: string[]): Buffer => {
  const body = bytes('ftyp', major, [0, 0, 0, 0], ...compatible)
  const size = Buffer.alloc(4)
  size.writeUInt32BE(body.length + 4)
  return bytes(size, body, 'rest of the file')
}
/** Bytes that look like compressed pixels: no markup, no signature of their own. */
const pixels = (n: number): Buffer => { const b = Buffer.alloc(n); for (let i = 0; i < n; i++) b[i] = (i * 151 + 7) % 251 === 60 ? 61 : (i * 151 + 7) % 251; return b }

describe('the type of an upload, from its bytes', { timeout: 10_000 }, () => {
  test('each of the five signatures names its type', () => {
    assert.equal(signatureType(bytes([0xff, 0xd8, 0xff, 0xe0], pixels(40))), 'image/jpeg')
    assert.equal(signatureType(bytes('\x89PNG\r\n\x1a\n', pixels(40))), 'image/png')
    assert.equal(signatureType(bytes('GIF87a', pixels(40))), 'image/gif')
    assert.equal(signatureType(bytes('GIF89a', pixels(40))), 'image/gif')
    assert.equal(signatureType(bytes('RIFF', [1, 2, 3, 4], 'WEBPVP8 ', pixels(40))), 'image/webp')
    assert.equal(signatureType(ftyp('avif', 'mif1', 'miaf')), 'image/avif')
    assert.equal(signatureType(ftyp('avis', 'msf1')), 'image/avif')
    assert.equal(signatureType(ftyp('mif1', 'miaf', 'avif')), 'image/avif', 'AVIF named among the compatible brands')
  })

  test('everything else names none: HEIC, other RIFF and ftyp files, SVG, HTML, PDF, text, nothing, a truncated signature', () => {
    for (const [name, file] of [
      ['HEIC', ftyp('heic', 'mif1', 'heic')],
      ['HEIF (mif1 alone)', ftyp('mif1', 'heic')],
      ['an MP4', ftyp('isom', 'iso2', 'mp41')],
      ['a WAV', bytes('RIFF', [1, 2, 3, 4], 'WAVEfmt ')],
      ['SVG', bytes('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')],
      ['HTML', bytes('<!doctype html><title>x</title>')],
      ['PDF', bytes('%PDF-1.7\n')],
      ['text', bytes('hello')],
      ['nothing', Buffer.alloc(0)],
      ['half a PNG signature', bytes('\x89PNG')],
      ['a PNG signature with a wrong byte', bytes('\x89PNG\r\n\x1a\x0b', pixels(40))],
      ['two JPEG bytes', bytes([0xff, 0xd8])],
      ['an ftyp box that claims brands past its end', bytes([0, 0, 0, 0x40], 'ftypmif1', [0, 0, 0, 0])]
    ] as const) {
      assert.equal(signatureType(file), undefined, name)
      assert.deepEqual(imageType(file), { refused: 'not-an-image' }, name)
    }
  })

  test('an image with markup or a document inside is a polyglot, whatever its case and wherever it is', () => {
    const png = (...rest: Array<string | Buffer>): Buffer => bytes('\x89PNG\r\n\x1a\n', pixels(2000), ...rest, pixels(2000))
    for (const [name, file] of [
      ['a script in the middle', png('<ScRiPt>alert(1)</script>')],
      ['an HTML document after the image', bytes(png(), '<!DOCTYPE html><p>hi')],
      ['an iframe', png('<iframe src=x>')],
      ['<html> in a text chunk', png('tEXt<html>')],
      ['SVG at the start', bytes('GIF89a', '<svg onload=alert(1)>')],
      ['a PDF header within the first kilobyte', bytes([0xff, 0xd8, 0xff, 0xfe, 0, 16], '%PDF-1.4', pixels(3000))],
      ['a ZIP directory at the end (GIFAR)', bytes('GIF89a', pixels(5000), 'PK\x05\x06', Buffer.alloc(18))]
    ] as const) {
      assert.deepEqual(imageType(file), { refused: 'polyglot' }, name)
    }
  })

  test('an image whose bytes merely contain "<" or XML metadata further in is an image', () => {
    const xmp = '<?xpacket begin=""?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF></rdf:RDF></x:xmpmeta>'
    assert.deepEqual(imageType(bytes([0xff, 0xd8, 0xff, 0xe1], pixels(2000), xmp, '<<< <a', pixels(2000))), { type: 'image/jpeg' })
    assert.deepEqual(imageType(bytes('\x89PNG\r\n\x1a\n', pixels(100_000))), { type: 'image/png' })
    // A PDF header past the first kilobyte is not one a reader looks for.
    assert.deepEqual(imageType(bytes('GIF89a', pixels(2000), '%PDF-1.4', pixels(100))), { type: 'image/gif' })
  })

  test('read in pieces of any sizes, a file gets the verdict it gets whole (an upload is judged as it arrives)', () => {
    const files = [
      bytes([0xff, 0xd8, 0xff, 0xe0], pixels(200_000)),
      bytes([0xff, 0xd8, 0xff, 0xe0], pixels(70_000), '<ScRiPt', pixels(70_000)),
      bytes('\x89PNG\r\n\x1a\n', pixels(100_000), 'PK\x05\x06', pixels(1000)),
      bytes('\x89PNG\r\n\x1a\n', 'PK\x05\x06', pixels(100_000)),
      bytes('GIF89a', pixels(500), '<svg', pixels(5000)),
      bytes('GIF89a', pixels(1500), '<svg', pixels(5000)),
      bytes('<html>', pixels(100))
    ]
    fc.assert(fc.property(fc.constantFrom(...files.keys()), fc.array(fc.integer({ min: 1, max: 90_000 }), { maxLength: 12 }), (which, cuts) => {
      const file = files[which]!
      const scan = new TypeScan()
      let at = 0
      for (const cut of cuts) {
        if (at >= file.length) break
        scan.push(file.subarray(at, Math.min(file.length, at + cut)))
        at += cut
      }
      if (at < file.length) scan.push(file.subarray(at))
      assert.deepEqual(scan.verdict(), imageType(file))
    }), { numRuns: 300 })
    // A marker cut anywhere between two pieces is still found.
    const marked = files[1]!
    const marker = marked.indexOf('<ScRiPt')
    for (let cut = marker; cut <= marker + 7; cut++) {
      const scan = new TypeScan()
      scan.push(marked.subarray(0, cut))
      scan.push(marked.subarray(cut))
      assert.deepEqual(scan.verdict(), { refused: 'polyglot' }, `cut at ${cut - marker}`)
    }
    assert.deepEqual(files.map((f) => imageType(f)), [
      { type: 'image/jpeg' }, { refused: 'polyglot' }, { refused: 'polyglot' }, { type: 'image/png' },
      { refused: 'polyglot' }, { type: 'image/gif' }, { refused: 'not-an-image' }
    ])
  })
})
