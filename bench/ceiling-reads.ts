// What both ceilings of `npm run bench:ceiling` read and answer (bench/ceiling.ts on Fastify,
// bench/ceiling-http.ts on node:http): the floor's statements on the scratch SQLite file, the
// service's representations, their JSON schemas and the service's tag.
import { hash } from 'node:crypto'
import Sqlite from 'better-sqlite3'
import { POST_BY_ID, PRODUCT_BY_ID } from './floor-sqlite.js'

// SQLite only, as bench/ceiling-run.ts runs it: reads need none of the floor's write settings.
const db = new Sqlite((process.env.CEILING_DATABASE_URL ?? '').slice('file:'.length))
const postById = db.prepare(POST_BY_ID)
const productById = db.prepare(PRODUCT_BY_ID)
interface PostRow { id: number, title: string, content: string, author_id: number, author_name: string, views: number, created_at: string, updated_at: string }
interface ProductRow { id: number, name: string, price: number, category: string, stock: number, on_sale: number, created_at: string, updated_at: string }

// The service's representations (src/posts/post.representation.ts, src/products/product.representation.ts);
// SQLite keeps times as the ISO text they are sent as. Undefined: no such row.
export function readPost (id: number): object | undefined {
  const r = postById.get(id) as PostRow | undefined
  return r === undefined ? undefined : { id: r.id, title: r.title, content: r.content, author: { id: r.author_id, name: r.author_name }, views: r.views, createdAt: r.created_at, updatedAt: r.updated_at }
}

export function readProduct (id: number): object | undefined {
  const r = productById.get(id) as ProductRow | undefined
  return r === undefined ? undefined : { id: r.id, name: r.name, price: r.price, category: r.category, stock: r.stock, onSale: r.on_sale === 1, createdAt: r.created_at, updatedAt: r.updated_at }
}

const text = { type: 'string' } as const
const integer = { type: 'integer' } as const
export const POST_JSON = { type: 'object', properties: { id: integer, title: text, content: text, author: { type: 'object', properties: { id: integer, name: text } }, views: integer, createdAt: text, updatedAt: text } } as const
export const PRODUCT_JSON = { type: 'object', properties: { id: integer, name: text, price: { type: 'number' }, category: text, stock: integer, onSale: { type: 'boolean' }, createdAt: text, updatedAt: text } } as const

/** The service's tag (src/http/etag.ts): SHA-1 of the bytes sent, base64url. */
export const tagOf = (json: string): string => `"${hash('sha1', json, 'base64url')}"`
