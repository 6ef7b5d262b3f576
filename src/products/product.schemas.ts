import { Type, type Static } from '@sinclair/typebox'
import { Id, named, ReadOnly, ref, Text, Timestamp } from '../http/schemas.js'
import { Image, MAX_PRODUCT_IMAGES } from '../files/image.schemas.js'

// Products. The field rules are written once here and shared by
// POST (create) and PATCH (change some members).

export const CATEGORIES = ['BOOK', 'CLOTHING', 'ELECTRONICS', 'FOOD', 'HOME', 'SPORTS'] as const
export type Category = typeof CATEGORIES[number]

export const MAX_PRICE = 1_000_000_000
export const MAX_STOCK = 1_000_000

export const ProductName = Text({ maxLength: 100, description: 'Non-blank, at most 100 characters.', examples: ['Paper notebook'] })
export const Price = Type.Integer({ minimum: 1, maximum: MAX_PRICE, description: 'An integer number of the smallest currency unit, 1 to 1,000,000,000.', examples: [1500] })
// `type` first, so a non-string reports "must be a string"; the enum message lists the members.
export const CategorySchema = Type.Unsafe<Category>({ type: 'string', enum: [...CATEGORIES], description: `One of ${CATEGORIES.join(', ')}.`, examples: ['BOOK'] })
export const Stock = Type.Integer({ minimum: 0, maximum: MAX_STOCK, description: 'Units on hand, 0 to 1,000,000.', examples: [10] })
export const OnSale = Type.Boolean({ description: 'Whether the product can be ordered.' })

const readOnlyMembers = {
  id: ReadOnly('The product id.'),
  images: ReadOnly('The product\'s images (changed only through its images\' own operations).'),
  createdAt: ReadOnly('Creation time.'),
  updatedAt: ReadOnly('Time of the last change.')
}

export const ProductCreateBody = named('ProductCreateRequest', Type.Object({
  name: ProductName,
  price: Price,
  category: CategorySchema,
  stock: Type.Optional({ ...Stock, description: `${Stock.description} Default 0.` }),
  onSale: Type.Optional({ ...OnSale, description: `${OnSale.description} Default true.` }),
  ...readOnlyMembers
}, {
  additionalProperties: false,
  description: 'A new product. `stock` defaults to 0 and `onSale` to true.',
  examples: [{ name: 'Paper notebook', price: 1500, category: 'BOOK', stock: 10 }]
}))

/** The members PATCH may change; a body must carry at least one of them. */
export const WRITABLE_MEMBERS = ['name', 'price', 'category', 'stock', 'onSale'] as const

export const ProductPatchBody = named('ProductPatchRequest', Type.Object({
  name: Type.Optional(ProductName),
  price: Type.Optional(Price),
  category: Type.Optional(CategorySchema),
  stock: Type.Optional(Stock),
  onSale: Type.Optional(OnSale),
  ...readOnlyMembers
}, {
  additionalProperties: false,
  // At least one writable member: reported on the field `body`, together with any other
  // failure (see validation.ts).
  anyOf: WRITABLE_MEMBERS.map((member) => ({ required: [member] })),
  description: `Some of ${WRITABLE_MEMBERS.join(', ')}; at least one. \`null\` is not a value for any member.`,
  examples: [{ price: 1200, onSale: false }]
}))

export const ProductProperties = {
  id: Id,
  name: Type.String(),
  price: Type.Integer({ minimum: 1 }),
  category: CategorySchema,
  stock: Type.Integer({ minimum: 0 }),
  onSale: Type.Boolean(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  images: Type.Array(ref(Image), { maxItems: MAX_PRODUCT_IMAGES, description: `Oldest first; at most ${MAX_PRODUCT_IMAGES} (POST /v1/products/{id}/images).` })
}
export const Product = named('Product', Type.Object(ProductProperties, {
  description: 'A product.',
  examples: [{ id: 3, name: 'Paper notebook', price: 1500, category: 'BOOK', stock: 10, onSale: true, createdAt: '2026-11-21T16:30:00.000Z', updatedAt: '2026-11-21T16:30:00.000Z', images: [] }]
}))
export type ProductType = Static<typeof Product>
