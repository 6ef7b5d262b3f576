import type { Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export interface PostTable {
  id: GeneratedId
  author_id: Int
  title: string
  content: string
  views: Int
  created_at: Timestamp
  updated_at: Timestamp
}

export type PostRow = Selectable<PostTable>
