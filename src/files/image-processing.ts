import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { join } from 'node:path'
import type Sharp from 'sharp'
import { TypeScan, type ImageType } from './image-type.js'

// An upload made into what is stored, once: the original's pixels in its own format, with every
// piece of metadata removed (EXIF with its GPS position and camera serial, XMP, comments, the
// ICC profile once the pixels are in sRGB) and the EXIF orientation applied to the pixels, so
// that its width and height are as a person sees it; and two WebP variants that fit in 200×200
// and 800×800, never enlarged. libvips (through sharp) does the work in a process of its own
// at the lowest priority (image-process.ts); the caller bounds how many run at once
// (work-slots.ts). The upload is read from a file and what is made is written to files:
// JavaScript holds none of the pixels or of the encoded bytes, whatever the size of the image.
//
// The checks come before any pixel is decoded: the type from the bytes (image-type.ts: libvips
// itself would read SVG, PDF and more), then the dimensions from the header alone, so that a
// small file claiming 30,000 × 30,000 pixels (a decompression bomb) is refused for what it
// claims. The decoder is given the same pixel limit, in case a header and its data disagree.

// sharp (libvips, some megabytes of native code and its threads) is loaded by the first upload,
// not by every start of the service. Decoded images are not kept between jobs: each upload is
// decoded once.
let loaded: Promise<typeof Sharp> | undefined
async function vips (): Promise<typeof Sharp> {
  loaded ??= import('sharp').then(({ default: sharp }) => { sharp.cache(false); return sharp })
  return await loaded
}

export interface ImageLimits {
  /** Pixels of all frames together. */
  maxPixels: number
  /** Pixels on either side. */
  maxSide: number
}

export const DEFAULT_IMAGE_LIMITS: ImageLimits = { maxPixels: 40_000_000, maxSide: 8000 }

export const VARIANTS = { thumb: 200, medium: 800 } as const
export type VariantName = keyof typeof VARIANTS

export interface MadeFile {
  path: string
  size: number
}

export interface ProcessedImage {
  type: ImageType
  width: number
  height: number
  /** The stored original: its format, its pixels turned upright, no metadata; with its SHA-256 (hex). */
  original: MadeFile & { sha256: string }
  /** WebP, in `outputFolder`. */
  variants: Record<VariantName, MadeFile>
}

export type ImageRefusal =
  | { refused: 'not-an-image' | 'polyglot' | 'undecodable' }
  | { refused: 'too-many-pixels', width: number, height: number }

/** The libvips loader each type must be read by: a file whose signature says PNG is read as PNG or not at all. */
const LOADER: Record<ImageType, string> = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp', 'image/gif': 'gif', 'image/avif': 'heif' }

function encode (image: Sharp.Sharp, type: ImageType): Sharp.Sharp {
  switch (type) {
    // Not mozjpeg: its trellis search took about 10 times as long on a 40-megapixel image of noise
    // (the worst case: 21–25 s against 2 s).
    case 'image/jpeg': return image.jpeg({ quality: 90 })
    case 'image/png': return image.png({ compressionLevel: 9 })
    case 'image/webp': return image.webp({ quality: 90 })
    case 'image/gif': return image.gif()
    case 'image/avif': return image.avif({ quality: 60, effort: 2 })
  }
}

/** Whether an EXIF orientation turns the image a quarter (5 to 8): then its width and height swap. */
const quarterTurn = (orientation: number | undefined): boolean => orientation !== undefined && orientation >= 5 && orientation <= 8

/** Reads a file in pieces: what the type scan and the hash see, never the whole file at once. */
async function readPieces (path: string, each: (chunk: Buffer) => void): Promise<void> {
  for await (const chunk of createReadStream(path)) each(chunk as Buffer)
}

/** The type of the file at `path` by its bytes (image-type.ts). */
async function fileImageType (path: string): Promise<ReturnType<TypeScan['verdict']>> {
  const scan = new TypeScan()
  await readPieces(path, (chunk) => { scan.push(chunk) })
  return scan.verdict()
}

async function sha256Of (path: string): Promise<string> {
  const hash = createHash('sha256')
  await readPieces(path, (chunk) => { hash.update(chunk) })
  return hash.digest('hex')
}

/**
 * Makes the stored original and its variants of the upload at `input`, as files in
 * `outputFolder` (`original`, `thumb`, `medium`), or says why not.
 */
export async function processImage (input: string, outputFolder: string, limits: ImageLimits = DEFAULT_IMAGE_LIMITS): Promise<ProcessedImage | ImageRefusal> {
  const verdict = await fileImageType(input)
  if ('refused' in verdict) return verdict
  const { type } = verdict
  const animated = type === 'image/gif' || type === 'image/webp'

  const sharp = await vips()
  let header: Sharp.Metadata
  try {
    header = await sharp(input, { animated, limitInputPixels: false }).metadata()
  } catch {
    return { refused: 'undecodable' }
  }
  if (header.format !== LOADER[type] || header.width === undefined || header.height === undefined) return { refused: 'undecodable' }
  if (type === 'image/avif' && header.compression !== 'av1') return { refused: 'undecodable' }
  // Animated: `height` is that of all frames stacked; one frame is `pageHeight`.
  const frameHeight = header.pageHeight ?? header.height
  const pixels = header.width * header.height
  if (pixels > limits.maxPixels || header.width > limits.maxSide || frameHeight > limits.maxSide) {
    return quarterTurn(header.orientation)
      ? { refused: 'too-many-pixels', width: frameHeight, height: header.width }
      : { refused: 'too-many-pixels', width: header.width, height: frameHeight }
  }

  try {
    const originalPath = join(outputFolder, 'original')
    // autoOrient before anything else, metadata dropped on output (sharp's default keeps none).
    const original = await encode(sharp(input, { animated, limitInputPixels: limits.maxPixels, failOn: 'error' }).autoOrient(), type).toFile(originalPath)
    const height = original.pageHeight ?? original.height
    const variant = async (name: VariantName): Promise<MadeFile> => {
      const path = join(outputFolder, name)
      const made = await sharp(originalPath, { limitInputPixels: limits.maxPixels })
        .resize(VARIANTS[name], VARIANTS[name], { fit: 'inside', withoutEnlargement: true })
        .webp({ quality: 80 })
        .toFile(path)
      return { path, size: made.size }
    }
    const [thumb, medium, sha256] = await Promise.all([variant('thumb'), variant('medium'), sha256Of(originalPath)])
    return { type, width: original.width, height, original: { path: originalPath, size: original.size, sha256 }, variants: { thumb, medium } }
  } catch {
    return { refused: 'undecodable' }
  }
}
