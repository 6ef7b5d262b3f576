import type { Selectable } from 'kysely'
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
}

export type ProductRow = Selectable<ProductTable>
