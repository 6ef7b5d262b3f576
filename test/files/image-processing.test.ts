import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { after, describe, test } from 'node:test'
import sharp from 'sharp'
import { pngClaiming } from './support.js'
import { DEFAULT_IMAGE_LIMITS, processImage as processFile, type ImageLimits, type ProcessedImage } from '../../src/files/image-processing.js'

// Real images of each type, made by the encoder, through the processing an upload gets.

const solid = (width: number, height: number): sharp.Sharp => sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 20 } } })

const folders: string[] = []
after(async () => { for (const folder of folders) await rm(folder, { recursive: true, force: true }) })

/** The bytes as an upload is processed: from a file, into a folder of its own. */
async function processImage (bytes: Buffer, limits: ImageLimits = DEFAULT_IMAGE_LIMITS): ReturnType<typeof processFile> {
  const folder = await mkdtemp(join(tmpdir(), 'image-processing-'))
  folders.push(folder)
  await writeFile(join(folder, 'upload'), bytes)
  return await processFile(join(folder, 'upload'), folder, limits)
}

function processed (result: Awaited<ReturnType<typeof processImage>>): ProcessedImage {
  if ('refused' in result) assert.fail(`refused: ${JSON.stringify(result)}`)
  return result
}

/** Whether an EXIF block holds the rational n/d (either byte order). */
function hasRational (exif: Buffer, n: number, d: number): boolean {
  for (const le of [false, true]) {
    const b = Buffer.alloc(8)
    if (le) { b.writeUInt32LE(n); b.writeUInt32LE(d, 4) } else { b.writeUInt32BE(n); b.writeUInt32BE(d, 4) }
    if (exif.includes(b)) return true
  }
  return false
}

describe('processing an uploaded image', { timeout: 60_000 }, () => {
  test('each of the five types is kept in its own format, with WebP variants that fit in 200 and 800 pixels', async () => {
    const made = {
      'image/jpeg': await solid(1600, 1200).jpeg().toBuffer(),
      'image/png': await solid(1600, 1200).png().toBuffer(),
      'image/webp': await solid(1600, 1200).webp().toBuffer(),
      'image/gif': await solid(1600, 1200).gif().toBuffer(),
      'image/avif': await solid(1600, 1200).avif({ effort: 0 }).toBuffer()
    }
    const formats = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp', 'image/gif': 'gif', 'image/avif': 'heif' }
    for (const [type, bytes] of Object.entries(made) as Array<[keyof typeof made, Buffer]>) {
      const image = processed(await processImage(bytes))
      assert.equal(image.type, type)
      assert.deepEqual([image.width, image.height], [1600, 1200], type)
      assert.equal((await sharp(image.original.path).metadata()).format, formats[type], type)
      const thumb = await sharp(image.variants.thumb.path).metadata()
      const medium = await sharp(image.variants.medium.path).metadata()
      assert.deepEqual([thumb.format, thumb.width, thumb.height], ['webp', 200, 150], type)
      assert.deepEqual([medium.format, medium.width, medium.height], ['webp', 800, 600], type)
    }
  })

  test('a small image is never enlarged', async () => {
    const image = processed(await processImage(await solid(120, 40).png().toBuffer()))
    for (const variant of [image.variants.thumb, image.variants.medium]) {
      const meta = await sharp(variant.path).metadata()
      assert.deepEqual([meta.width, meta.height], [120, 40])
    }
  })

  test('a photo turned by its EXIF orientation (6) comes out upright, without its GPS position, camera or any EXIF', async () => {
    const photo = await solid(300, 100)
      .withMetadata({ orientation: 6 })
      .withExif({ IFD0: { Make: 'TestCam', Model: 'Serial123' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '48/1 51/1 2413/100', GPSLongitudeRef: 'E', GPSLongitude: '2/1 17/1 4019/100' } })
      .jpeg().toBuffer()
    const before = await sharp(photo).metadata()
    // What the test sends has them all.
    assert.equal(before.orientation, 6)
    assert.ok(before.exif !== undefined && before.exif.includes('TestCam') && hasRational(before.exif, 2413, 100))

    const image = processed(await processImage(photo))
    assert.deepEqual([image.width, image.height], [100, 300], 'width and height as a person sees the photo')
    assert.equal(image.original.sha256, createHash('sha256').update(await readFile(image.original.path)).digest('hex'))
    for (const [name, made] of [['original', image.original], ['thumb', image.variants.thumb], ['medium', image.variants.medium]] as const) {
      const bytes = await readFile(made.path)
      assert.equal(bytes.length, made.size, name)
      const after = await sharp(bytes).metadata()
      assert.equal(after.exif, undefined, `${name}: EXIF left`)
      assert.equal(after.xmp, undefined, `${name}: XMP left`)
      assert.ok(after.orientation === undefined || after.orientation === 1, `${name}: orientation ${after.orientation}`)
      assert.ok(after.height! > after.width!, `${name}: ${after.width}×${after.height} is not upright`)
      assert.ok(!bytes.includes('TestCam') && !bytes.includes('Serial123'), `${name}: camera left`)
    }
  })

  test('a header claiming 30,000 × 30,000 pixels is refused for it before decoding, whatever its few bytes hold; so is a side past 8,000', async () => {
    const bomb = pngClaiming(30_000, 30_000)
    assert.ok(bomb.length < 200)
    // 'too-many-pixels' with the header's dimensions comes only from the check made before any
    // decoding (the decoder's own limit would fail it as undecodable).
    assert.deepEqual(await processImage(bomb), { refused: 'too-many-pixels', width: 30_000, height: 30_000 })
    assert.deepEqual(await processImage(pngClaiming(8001, 10)), { refused: 'too-many-pixels', width: 8001, height: 10 })
    assert.deepEqual(await processImage(pngClaiming(10, 8001)), { refused: 'too-many-pixels', width: 10, height: 8001 })
    // Within the limits, it is what its data holds that decides: here, not an image.
    assert.deepEqual(await processImage(pngClaiming(8000, 5000)), { refused: 'undecodable' })
  })

  test('the limits are the caller\'s: 40 megapixels by default, fewer when asked', async () => {
    const png = await solid(200, 100).png().toBuffer()
    assert.deepEqual(await processImage(png, { maxPixels: 19_999, maxSide: 8000 }), { refused: 'too-many-pixels', width: 200, height: 100 })
    assert.deepEqual(await processImage(png, { maxPixels: 20_000, maxSide: 199 }), { refused: 'too-many-pixels', width: 200, height: 100 })
    processed(await processImage(png, { maxPixels: 20_000, maxSide: 200 }))
  })

  test('what is not one of the five images is refused before any decoder sees it: SVG, a signature on junk, a truncated file', async () => {
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>')
    assert.deepEqual(await processImage(svg), { refused: 'not-an-image' })
    assert.deepEqual(await processImage(Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.alloc(5000, 7)])), { refused: 'undecodable' })
    const jpeg = await solid(400, 400).jpeg().toBuffer()
    assert.deepEqual(await processImage(jpeg.subarray(0, 200)), { refused: 'undecodable' })
    // A GIF's signature in front of a PNG: each decoder reads only its own type.
    const png = await solid(20, 20).png().toBuffer()
    assert.deepEqual(await processImage(Buffer.concat([Buffer.from('GIF89a'), png.subarray(6)])), { refused: 'undecodable' })
  })
})
