import type { ColumnType, Selectable } from 'kysely'
import type { GeneratedId, Int, Timestamp } from '../db/types.js'

export interface BlobTable {
  key: string
  /** 1 once the blob's removal from the storage has begun (migration 021). */
  removing: ColumnType<bigint | number, number | undefined, number>
  created_at: Timestamp
}

export interface FileTable {
  id: GeneratedId
  blob_key: string
  content_type: string
  size: Int
  width: Int
  height: Int
  thumb_size: Int
  medium_size: Int
  product_id: ColumnType<bigint | null, bigint | null | undefined, never>
  post_id: ColumnType<bigint | null, bigint | null | undefined, never>
  avatar_of: ColumnType<bigint | null, bigint | null | undefined, never>
  created_at: Timestamp
}

export type FileRow = Selectable<FileTable>

export interface LeaseTable {
  name: string
  holder: string
  until: Timestamp
}
