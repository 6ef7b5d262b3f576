import assert from 'node:assert/strict'
import { deflateSync } from 'node:zlib'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import sharp from 'sharp'

// What the tests of files send: real images made by the encoder (distinct pixels make distinct
// files), hand-made headers for the hostile cases, and multipart forms.

/** A PNG of one colour; `seed` makes its bytes its own. */
export async function pngOf (width: number, height: number, seed = 0): Promise<Buffer> {
  return await sharp({ create: { width, height, channels: 3, background: { r: seed % 256, g: Math.floor(seed / 256) % 256, b: 90 } } }).png().toBuffer()
}

/** A PNG whose header says width × height, with one tiny compressed row as its data. */
export function pngClaiming (width: number, height: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0 })
  const crc = (bytes: Buffer): number => { let c = 0xffffffff; for (const b of bytes) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0 }
  const chunk = (type: string, data: Buffer): Buffer => {
    const length = Buffer.alloc(4); length.writeUInt32BE(data.length)
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
    const sum = Buffer.alloc(4); sum.writeUInt32BE(crc(body))
    return Buffer.concat([length, body, sum])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4)
  ihdr[8] = 8; ihdr[9] = 2
  return Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(Buffer.alloc(1 + 3 * 16))), chunk('IEND', Buffer.alloc(0))])
}

export interface Part { name: string, filename?: string, type?: string, body: Buffer | string }

/** A multipart/form-data body of these parts. */
export function form (parts: Part[]): { payload: Buffer, contentType: string } {
  const boundary = `----test${Math.random().toString(16).slice(2)}`
  const chunks: Buffer[] = []
  for (const part of parts) {
    const disposition = `form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${part.type === undefined ? '' : `Content-Type: ${part.type}\r\n`}\r\n`))
    chunks.push(Buffer.isBuffer(part.body) ? part.body : Buffer.from(part.body))
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` }
}

export async function uploadTo (app: FastifyInstance, url: string, auth: Record<string, string>, body: Buffer, contentType = 'image/png', method: 'POST' | 'PUT' = 'POST'): Promise<LightMyRequestResponse> {
  return await app.inject({ method, url, headers: { ...auth, 'content-type': contentType }, payload: body })
}

/** Waits (bounded) until the check holds: removals of bytes happen after the answer. */
export async function eventually (check: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!await check()) {
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
