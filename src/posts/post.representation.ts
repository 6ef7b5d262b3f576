import { toIso } from '../db/types.js'
import { toImages } from '../files/image.representation.js'
import type { PostWithAuthor } from './post.table.js'

/** The post representation, exactly `{id, title, content, author: {id, name}, views, createdAt, updatedAt, images}`; `base`: PUBLIC_URL. */
export function toPost (row: PostWithAuthor, base: string) {
  return {
    id: row.id,
    title: row.title,
    content: row.content,
    author: { id: row.author_id, name: row.author_name },
    views: row.views,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    images: toImages(row.images, base)
  }
}
