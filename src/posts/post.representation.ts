import { toIso } from '../db/types.js'
import { toImages } from '../files/image.representation.js'
import { asBigInt, asNumber, type JsonReady } from '../http/json-numbers.js'
import type { PostWithAuthor } from './post.table.js'

/** The post representation, exactly `{id, title, content, author: {id, name}, views, createdAt, updatedAt, images}`; `base`: PUBLIC_URL. */
export function toPost (row: PostWithAuthor, base: string) {
  return postOf(row, base, asBigInt)
}

/** The same representation for JSON.stringify (http/json-numbers.ts): its integers as numbers; a RangeError if one is past 2^53 − 1. */
export function toPostJson (row: PostWithAuthor, base: string): JsonReady<ReturnType<typeof toPost>> {
  return postOf(row, base, asNumber)
}

function postOf<I extends bigint | number> (row: PostWithAuthor, base: string, integer: (value: bigint) => I) {
  return {
    id: integer(row.id),
    title: row.title,
    content: row.content,
    author: { id: integer(row.author_id), name: row.author_name },
    views: integer(row.views),
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    images: toImages(row.images, base)
  }
}
