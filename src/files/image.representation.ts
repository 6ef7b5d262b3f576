import type { ImageType } from './image.schemas.js'

// An image as its owner's row keeps it (products.images, posts.images: a JSON array; users.avatar:
// one, or null), written in the same transaction as the file's own row: every member of the
// representation but the addresses, which come from PUBLIC_URL when it is shown, so that a
// change of the service's address changes every link at once.

export interface StoredImage {
  id: number
  contentType: ImageType['contentType']
  size: number
  width: number
  height: number
  sha256: string
  createdAt: string
}

const NONE: readonly ImageType[] = Object.freeze([])

/** The image's representation; `base` is PUBLIC_URL. */
export function toImage (stored: StoredImage, base: string): ImageType {
  const url = `${base}/v1/files/${stored.id}`
  return {
    id: stored.id,
    url,
    contentType: stored.contentType,
    size: stored.size,
    width: stored.width,
    height: stored.height,
    sha256: stored.sha256,
    variants: { thumb: `${url}/thumb`, medium: `${url}/medium` },
    createdAt: stored.createdAt
  }
}

/** The images of a product or a post, oldest first, from its row's column. */
export function toImages (column: string, base: string): ImageType[] {
  // Most rows have none: no parse, one shared empty array (the serializer only reads it).
  if (column === '[]') return NONE as ImageType[]
  return (JSON.parse(column) as StoredImage[]).map((stored) => toImage(stored, base))
}

export function toAvatar (column: string | null, base: string): ImageType | null {
  return column === null ? null : toImage(JSON.parse(column) as StoredImage, base)
}
