import type { ColumnType, Selectable } from 'kysely'
import type { Flag, GeneratedId, Int, Timestamp } from '../db/types.js'

export interface ProductTable {
  id: GeneratedId
  name: string
  price: Int
  category: string
  stock: Int
  on_sale: Flag
  created_at: Timestamp
  updated_at: Timestamp
  /** The product's images as its representation shows them (JSON; files/image.representation.ts). */
  images: ColumnType<string, string | undefined, string>
}

export type ProductRow = Selectable<ProductTable>
