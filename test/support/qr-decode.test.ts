import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import * as OTPAuth from 'otpauth'
import QRCode from 'qrcode'
import { decodeQrSvg, svgToMatrix } from './qr-decode.js'

/** The d attribute of the stroked (dark-module) path. */
function darkPathData(svg: string): string {
  const d = /<path stroke="[^"]*" d="([^"]*)"/.exec(svg)?.[1]
  assert.ok(d, 'the SVG has a stroked path')
  return d
}

describe('decodeQrSvg', () => {
  test('reads back an otpauth:// enrolment URI', { timeout: 10_000 }, async () => {
    const otp = new OTPAuth.TOTP({
      issuer: 'Issuer',
      label: 'ada@example.com',
      secret: new OTPAuth.Secret({ size: 20 }),
      algorithm: 'SHA1',
      digits: 6,
      period: 30
    })
    const uri = otp.toString()
    assert.match(uri, /^otpauth:\/\/totp\/Issuer:ada%40example\.com\?/)
    const svg = await QRCode.toString(uri, { type: 'svg' })
    const decoded = decodeQrSvg(svg)
    assert.equal(decoded, uri)

    // The URI read back carries the same secret and parameters.
    const parsed = OTPAuth.URI.parse(decoded)
    assert.ok(parsed instanceof OTPAuth.TOTP)
    assert.equal(parsed.secret.base32, otp.secret.base32)
    assert.equal(parsed.issuer, 'Issuer')
    assert.equal(parsed.label, 'ada@example.com')
    assert.equal(parsed.algorithm, 'SHA1')
    assert.equal(parsed.digits, 6)
    assert.equal(parsed.period, 30)
  })

  test('reads back strings of several lengths (QR versions)', { timeout: 10_000 }, async () => {
    const texts = [
      'a',
      'HELLO WORLD 123',
      'https://example.com/path?query=value&other=1',
      'ünïcödé ✓ — ça marche',
      'x'.repeat(150),
      Array.from({ length: 60 }, (_, i) => `word${i}`).join(' '),
      'otpauth://totp/'.padEnd(900, '0123456789abcdef')
    ]
    const versions = new Set<number>()
    for (const text of texts) {
      const svg = await QRCode.toString(text, { type: 'svg' })
      const { version, modules } = QRCode.create(text)
      versions.add(version)
      // The default margin is a 4-module quiet zone on each side.
      assert.equal(svgToMatrix(svg).length, modules.size + 8)
      assert.equal(decodeQrSvg(svg), text, `${text.length} characters, version ${version}`)
    }
    assert.ok(versions.size >= 5, `versions ${[...versions].join(', ')}`)
  })

  test('reads back other qrcode options: no margin, width, colours, error correction', { timeout: 10_000 }, async () => {
    const text = 'otpauth://totp/Issuer:bob%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Issuer'
    const options: QRCode.QRCodeToStringOptions[] = [
      { type: 'svg', margin: 0 },
      { type: 'svg', margin: 1, width: 256 },
      { type: 'svg', errorCorrectionLevel: 'H' },
      { type: 'svg', errorCorrectionLevel: 'L', color: { dark: '#223344ff', light: '#0000' } }
    ]
    for (const option of options) {
      assert.equal(decodeQrSvg(await QRCode.toString(text, option)), text, JSON.stringify(option))
    }
  })

  test('the module matrix matches the one qrcode built', { timeout: 10_000 }, async () => {
    const text = 'matrix check'
    const margin = 2
    const { modules } = QRCode.create(text)
    const matrix = svgToMatrix(await QRCode.toString(text, { type: 'svg', margin }))
    assert.equal(matrix.length, modules.size + 2 * margin)
    for (let row = 0; row < matrix.length; row++) {
      for (let col = 0; col < matrix.length; col++) {
        const inside = row >= margin && col >= margin && row < margin + modules.size && col < margin + modules.size
        const expected = inside && modules.get(row - margin, col - margin) === 1
        assert.equal(matrix[row]![col], expected, `module ${row},${col}`)
      }
    }
  })

  test('a corrupted SVG throws', { timeout: 10_000 }, async () => {
    const svg = await QRCode.toString('otpauth://totp/Issuer:ada%40example.com?secret=JBSWY3DPEHPK3PXP', { type: 'svg' })
    const d = darkPathData(svg)

    // The dark-module path removed.
    assert.throws(() => decodeQrSvg(svg.replace(/<path stroke="[^"]*" d="[^"]*"\/>/, '')), /stroked <path>/)
    // The path present but empty: nothing to find.
    assert.throws(() => decodeQrSvg(svg.replace(d, '')), /no QR code found/)
    // Only the top rows of modules kept.
    const rows = d.split('M')
    assert.throws(() => decodeQrSvg(svg.replace(d, rows.slice(0, Math.floor(rows.length / 2)).join('M'))), /no QR code found/)
    // Not SVG, no viewBox, path data that is not on the module grid.
    assert.throws(() => decodeQrSvg('<html></html>'), /no <svg>/)
    assert.throws(() => decodeQrSvg(svg.replace(/viewBox="[^"]*"/, '')), /viewBox/)
    assert.throws(() => decodeQrSvg(svg.replace(d, 'M4 4h7')), /off the module grid/)
    assert.throws(() => decodeQrSvg(svg.replace(d, 'M4 4.5v7')), /unexpected QR path data/)
  })
})
