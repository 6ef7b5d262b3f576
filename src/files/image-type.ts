// What an uploaded file is, decided by its own bytes: never by the Content-Type it came with or a
// name. Exactly five raster formats are taken; everything else (SVG, HTML, PDF, HEIC, a format's
// signature on other bytes) is refused, and so is a file that is an image *and* something a
// browser or a reader would take for another type: HTML or script anywhere in it, a PDF header
// in its first kilobyte (readers look that far), a ZIP directory at its end (a GIFAR). The
// stored bytes are re-encoded anyway (image-processing.ts), so nothing of such a file would
// reach a browser; refusing it says so to the one who sent it.

export const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/avif', 'image/gif'] as const
export type ImageType = typeof IMAGE_TYPES[number]

export type TypeVerdict = { type: ImageType } | { refused: 'not-an-image' | 'polyglot' }

const ascii = (bytes: Uint8Array, at: number, text: string): boolean => {
  if (bytes.length < at + text.length) return false
  for (let i = 0; i < text.length; i++) if (bytes[at + i] !== text.charCodeAt(i)) return false
  return true
}

// ISO BMFF brands of AVIF (a still image, an image sequence). HEIC's (heic, heix, hevc, mif1
// alone) are not among them: the prebuilt libvips has no HEVC decoder, and browsers mostly none.
const AVIF_BRANDS = new Set(['avif', 'avis'])

/** The image type a file's signature names, or undefined. */
export function signatureType (bytes: Uint8Array): ImageType | undefined {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg'
  if (ascii(bytes, 0, '\x89PNG\r\n\x1a\n')) return 'image/png'
  if (ascii(bytes, 0, 'GIF87a') || ascii(bytes, 0, 'GIF89a')) return 'image/gif'
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WEBP')) return 'image/webp'
  if (ascii(bytes, 4, 'ftyp') && bytes.length >= 16) {
    // The box's size (big-endian) bounds its brands: the major brand at 8, then compatible ones from 16.
    const size = Math.min(bytes.length, ((bytes[0]! << 24) >>> 0) + (bytes[1]! << 16) + (bytes[2]! << 8) + bytes[3]!)
    const brand = (at: number): string => String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!)
    if (AVIF_BRANDS.has(brand(8))) return 'image/avif'
    for (let at = 16; at + 4 <= size; at += 4) if (AVIF_BRANDS.has(brand(at))) return 'image/avif'
  }
  return undefined
}

// What makes a browser or a document reader take bytes for something other than an image:
// markup that starts a document or a script (case-insensitive). Searched for in the whole file
// are only markers long enough that compressed pixels do not spell one by chance (each about
// once in 10^12 to 10^13 random bytes: a 10 MiB photo is refused by accident about once in
// 100,000 or more); the shorter ones (`<svg`, `<a `, `<?xml`) only in the first kilobyte, where
// a browser sniffing the type would look. XML further in is XMP metadata, which photos carry.
const EVERYWHERE = ['<script', '<!doctype', '<iframe', '<object', '<embed', '<html ', '<html>', '<body ', '<body>'].map((m) => Buffer.from(m, 'latin1'))
const AT_THE_START = [...EVERYWHERE, ...['<svg', '<a ', '<?xml', '<html', '<body', '<head', '<meta'].map((m) => Buffer.from(m, 'latin1'))]
const PDF = Buffer.from('%PDF-', 'latin1')
const ZIP_END = Buffer.from('PK\x05\x06', 'latin1')

function hasMarkup (bytes: Buffer, markers: Buffer[]): boolean {
  // Case-insensitive for ASCII letters: compared at each '<' only.
  let at = bytes.indexOf(0x3c)
  while (at !== -1) {
    for (const marker of markers) {
      if (at + marker.length > bytes.length) continue
      let same = true
      for (let i = 1; i < marker.length && same; i++) {
        const byte = bytes[at + i]!
        same = byte === marker[i] || ((byte | 0x20) === marker[i] && marker[i]! >= 0x61 && marker[i]! <= 0x7a)
      }
      if (same) return true
    }
    at = bytes.indexOf(0x3c, at + 1)
  }
  return false
}

const HEAD = 1024
// The end of a ZIP's central directory is within its last 64 KiB + 22 bytes.
const ZIP_WINDOW = 65_557
const LONGEST_MARKER = Math.max(...EVERYWHERE.map((m) => m.length))

/**
 * The verdict on a file read in pieces (an upload as it arrives, a file on disk): the same as on
 * the whole file at once, holding only its first kilobyte and its last 64 KiB.
 */
export class TypeScan {
  #head: Buffer = Buffer.alloc(0)
  #tail: Buffer = Buffer.alloc(0)
  #markup = false

  push (chunk: Buffer): void {
    if (this.#head.length < HEAD) this.#head = Buffer.concat([this.#head, chunk.subarray(0, HEAD - this.#head.length)])
    // The last bytes of what came before, so that a marker split between two pieces is found.
    const carried = this.#tail.subarray(Math.max(0, this.#tail.length - (LONGEST_MARKER - 1)))
    if (!this.#markup && hasMarkup(carried.length === 0 ? chunk : Buffer.concat([carried, chunk]), EVERYWHERE)) this.#markup = true
    this.#tail = chunk.length >= ZIP_WINDOW ? chunk.subarray(chunk.length - ZIP_WINDOW) : Buffer.concat([this.#tail, chunk]).subarray(-ZIP_WINDOW)
  }

  verdict (): TypeVerdict {
    const type = signatureType(this.#head)
    if (type === undefined) return { refused: 'not-an-image' }
    if (this.#markup || hasMarkup(this.#head, AT_THE_START)) return { refused: 'polyglot' }
    if (this.#head.includes(PDF)) return { refused: 'polyglot' }
    if (this.#tail.includes(ZIP_END)) return { refused: 'polyglot' }
    return { type }
  }
}

/** The verdict on a whole file: one of the five image types, or why not. */
export function imageType (bytes: Buffer): TypeVerdict {
  const scan = new TypeScan()
  scan.push(bytes)
  return scan.verdict()
}
