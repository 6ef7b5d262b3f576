import type { ColumnType, Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export interface PostTable {
  id: GeneratedId
  author_id: Int
  title: string
  content: string
  // Defaults to 0 in the database; only POST /v1/posts/{id}/views raises it.
  views: ColumnType<bigint, bigint | number | string | undefined, bigint | number | string>
  created_at: Timestamp
  updated_at: Timestamp
  /** The post's images as its representation shows them (JSON; files/image.representation.ts). */
  images: ColumnType<string, string | undefined, string>
}

export type PostRow = Selectable<PostTable>

/** A post as every read returns it: with its author's name, which its representation shows. */
export type PostWithAuthor = PostRow & { author_name: string }
