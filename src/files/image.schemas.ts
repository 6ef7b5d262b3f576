import { Type, type Static } from '@sinclair/typebox'
import { IdString, named, Timestamp } from '../http/schemas.js'
import { IMAGE_TYPES } from './image-type.js'

// An image: a product's, a post's or a user's avatar. Its bytes are served at `url` (and its
// variants' at theirs), never inline.

export const MAX_PRODUCT_IMAGES = 10
export const MAX_POST_IMAGES = 20

const imageExample = {
  id: 7,
  url: 'https://api.example.com/v1/files/7',
  contentType: 'image/jpeg',
  size: 183_204,
  width: 1200,
  height: 800,
  sha256: '2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae',
  variants: { thumb: 'https://api.example.com/v1/files/7/thumb', medium: 'https://api.example.com/v1/files/7/medium' },
  createdAt: '2026-11-28T16:30:00.000Z'
}

export const Image = named('Image', Type.Object({
  // A number, not the BigInt of other ids: an image is read from its owner's JSON, and the
  // profile's avatar (an image or null) is serialised by trying each, which a BigInt fails.
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The file id.', examples: [7] }),
  url: Type.String({ format: 'uri', description: 'The stored original: its format and pixels, turned upright, without metadata.' }),
  contentType: Type.Unsafe<typeof IMAGE_TYPES[number]>({ type: 'string', enum: [...IMAGE_TYPES], description: 'The format, decided by the file\'s own bytes.' }),
  size: Type.Integer({ minimum: 1, description: 'Bytes of the stored original.' }),
  width: Type.Integer({ minimum: 1, description: 'Pixels, as a person sees the image (its EXIF orientation applied).' }),
  height: Type.Integer({ minimum: 1 }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Of the stored original\'s bytes (hex); also its ETag.' }),
  variants: Type.Object({
    thumb: Type.String({ format: 'uri', description: 'WebP, within 200×200 pixels (never enlarged).' }),
    medium: Type.String({ format: 'uri', description: 'WebP, within 800×800 pixels (never enlarged).' })
  }),
  createdAt: Timestamp
}, { description: 'An image. Its bytes never change under its id.', examples: [imageExample] }))
export type ImageType = Static<typeof Image>

export const ImageParams = Type.Object({ id: IdString(), imageId: IdString() })
export const FileParams = Type.Object({ fileId: IdString() })
export const VariantParams = Type.Object({ fileId: IdString(), variant: Type.Unsafe<'thumb' | 'medium'>({ type: 'string', enum: ['thumb', 'medium'], description: '`thumb` (within 200×200) or `medium` (within 800×800), WebP.' }) })
