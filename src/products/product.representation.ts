import { toIso } from '../db/types.js'
import { toImages } from '../files/image.representation.js'
import { asBigInt, asNumber, type JsonReady } from '../http/json-numbers.js'
import type { Category, ProductType } from './product.schemas.js'
import type { ProductRow } from './product.table.js'

// Price and stock are bounded far below 2^53 (price by validation, stock by validation plus the
// units returned by cancellations), so they are written as plain numbers; the id stays a BigInt.
/** `base`: PUBLIC_URL, which the images' addresses start with. */
export function toProduct (row: ProductRow, base: string): ProductType {
  return productOf(row, base, asBigInt)
}

/** The same representation for JSON.stringify (http/json-numbers.ts): its id as a number. */
export function toProductJson (row: ProductRow, base: string): JsonReady<ProductType> {
  return productOf(row, base, asNumber)
}

function productOf<I extends bigint | number> (row: ProductRow, base: string, integer: (value: bigint) => I) {
  return {
    id: integer(row.id),
    name: row.name,
    price: Number(row.price),
    category: row.category as Category,
    stock: Number(row.stock),
    onSale: Number(row.on_sale) === 1,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    images: toImages(row.images, base)
  }
}
