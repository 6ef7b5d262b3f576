import sharp from 'sharp'
import { imageType, type ImageType } from './image-type.js'

// An upload made into what is stored, once: the original's pixels in its own format, with every
// piece of metadata removed (EXIF with its GPS position and camera serial, XMP, comments, the
// ICC profile once the pixels are in sRGB) and the EXIF orientation applied to the pixels, so
// that its width and height are as a person sees it; and two WebP variants that fit in 200×200
// and 800×800, never enlarged. libvips (through sharp) does the work on libuv's thread pool,
// off the event loop; the caller bounds how many run at once (work-slots.ts).
//
// The checks come before any pixel is decoded: the type from the bytes (image-type.ts: libvips
// itself would read SVG, PDF and more), then the dimensions from the header alone, so that a
// small file claiming 30,000 × 30,000 pixels (a decompression bomb) is refused for what it
// claims. The decoder is given the same pixel limit, in case a header and its data disagree.

// Decoded images are not kept between jobs: each upload is decoded once.
sharp.cache(false)

export interface ImageLimits {
  /** Pixels of all frames together. */
  maxPixels: number
  /** Pixels on either side. */
  maxSide: number
}

export const DEFAULT_IMAGE_LIMITS: ImageLimits = { maxPixels: 40_000_000, maxSide: 8000 }

export const VARIANTS = { thumb: 200, medium: 800 } as const
export type VariantName = keyof typeof VARIANTS

export interface ProcessedImage {
  type: ImageType
  width: number
  height: number
  /** The stored original: its format, its pixels turned upright, no metadata. */
  original: Buffer
  variants: Record<VariantName, Buffer>
}

export type ImageRefusal =
  | { refused: 'not-an-image' | 'polyglot' | 'undecodable' }
  | { refused: 'too-many-pixels', width: number, height: number }

/** The libvips loader each type must be read by: a file whose signature says PNG is read as PNG or not at all. */
const LOADER: Record<ImageType, string> = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp', 'image/gif': 'gif', 'image/avif': 'heif' }

function encode (image: sharp.Sharp, type: ImageType): sharp.Sharp {
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

export async function processImage (bytes: Buffer, limits: ImageLimits = DEFAULT_IMAGE_LIMITS): Promise<ProcessedImage | ImageRefusal> {
  const verdict = imageType(bytes)
  if ('refused' in verdict) return verdict
  const { type } = verdict
  const animated = type === 'image/gif' || type === 'image/webp'

  let header: sharp.Metadata
  try {
    header = await sharp(bytes, { animated, limitInputPixels: false }).metadata()
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
    const decoded = (): sharp.Sharp => sharp(bytes, { animated, limitInputPixels: limits.maxPixels, failOn: 'error' })
    // autoOrient before anything else, metadata dropped on output (sharp's default keeps none).
    const original = await encode(decoded().autoOrient(), type).toBuffer({ resolveWithObject: true })
    const height = original.info.pageHeight ?? original.info.height
    const variant = async (side: number): Promise<Buffer> => await sharp(original.data, { limitInputPixels: limits.maxPixels })
      .resize(side, side, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: 80 })
      .toBuffer()
    const [thumb, medium] = await Promise.all([variant(VARIANTS.thumb), variant(VARIANTS.medium)])
    return { type, width: original.info.width, height, original: original.data, variants: { thumb, medium } }
  } catch {
    return { refused: 'undecodable' }
  }
}
