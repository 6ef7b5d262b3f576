// The HTTP pieces the floor's routes share (bench/floor.ts): an answer of JSON text with its
// length, a body read whole, the caller's token as the database keeps it, a cursor's position.
import { hash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

/** What a route does with a request: at once (better-sqlite3), or by a promise (pg) that settles when it has answered. */
export type Handled = Promise<void> | undefined

/** A position in the posts' list, newest first: the creation time and id of the last post read. */
export interface Position { key: string, id: string }

/** The routes the floor answers, on one database (bench/floor-sqlite.ts, bench/floor-postgres.ts). */
export interface FloorRoutes {
  post: (res: ServerResponse, id: number) => Handled
  product: (res: ServerResponse, id: number) => Handled
  list: (res: ServerResponse, limit: number, after: Position | undefined) => Handled
  view: (res: ServerResponse, id: number) => Handled
  /** `token`: the SHA-256 of the bearer token (tokenHash); `body`: the request's JSON text. */
  createPost: (res: ServerResponse, token: string, body: string) => Handled
  patchPost: (res: ServerResponse, token: string, id: number, ifMatch: string | undefined, body: string) => Handled
  placeOrder: (res: ServerResponse, token: string, body: string) => Handled
}

// The service's media type, so that both send the same bytes for the same JSON.
const JSON_TYPE = 'application/json; charset=utf-8'

export function answer (res: ServerResponse, status: number, json: string, etag?: string): undefined {
  res.writeHead(status, etag === undefined
    ? { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(json) }
    : { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(json), etag })
  res.end(json)
}

/** The row as JSON, or 404 when the statement found none. */
export function answerRow (res: ServerResponse, row: unknown): undefined {
  if (row === undefined) return refuse(res, 404)
  answer(res, 200, JSON.stringify(row))
}

/** A status without a body: the bench never provokes one, so no error body is written. */
export function refuse (res: ServerResponse, status: number): undefined {
  res.writeHead(status, { 'content-length': 0 })
  res.end()
}

/** The floor's own failure: the bench counts any answer outside 2xx, so a 500 and the error in the floor's log. */
export function fail (res: ServerResponse, error: unknown): void {
  process.stderr.write(`${String(error)}\n`)
  if (!res.headersSent) refuse(res, 500)
}

export async function readBody (req: IncomingMessage): Promise<string> {
  return await new Promise((resolve, reject) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => { text += chunk })
    req.on('end', () => { resolve(text) })
    req.on('error', reject)
  })
}

/** The SHA-256 (hex) of the bearer token, as the sessions table keeps it; '' without one. */
export function tokenHash (req: IncomingMessage): string {
  const header = req.headers.authorization
  return header?.startsWith('Bearer ') === true ? hash('sha256', header.slice(7), 'hex') : ''
}

/**
 * The position a cursor of the service's stands for: `v2:` and JSON [list digest, creation time,
 * id] in base64url (src/http/sorted-paging.ts). The digest is not checked: the bench sends only
 * cursors of the newest-first list of every post.
 */
export function positionOf (cursor: string): Position {
  const [, key, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8').slice(3)) as [string, string, string]
  return { key, id }
}
