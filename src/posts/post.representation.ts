import { toIso } from '../db/types.js'
import type { PostWithAuthor } from './post.table.js'

/** The post representation, exactly `{id, title, content, author: {id, name}, views, createdAt, updatedAt}`. */
export function toPost (row: PostWithAuthor) {
  return {
    id: row.id,
    title: row.title,
    content: row.content,
    author: { id: row.author_id, name: row.author_name },
    views: row.views,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at)
  }
}
