// The peer for `npm run bench`: GET /v1/posts/{id} and GET /v1/posts?limit=20 written the way a
// team would write them without this service: Express 5, better-sqlite3, pino-http logging every
// request at info (to stdout, which the bench sends to a file, as it does the service's log).
// It answers the service's representation (the author nested, ISO times) and a Link header to
// the list's next page, with its own cursor; it has no authentication, and its ETags are
// Express's defaults. SQLite only.
//
//   PEER_DATABASE_URL=file:…   PEER_PORT=…   node --import tsx bench/peer.ts
import Database from 'better-sqlite3'
import express from 'express'
import { pinoHttp } from 'pino-http'

interface PostRow { id: number, title: string, content: string, author_id: number, author_name: string, views: number, created_at: string, updated_at: string }

const db = new Database((process.env.PEER_DATABASE_URL ?? '').slice('file:'.length))
db.pragma('journal_mode = WAL')

const SELECT = 'SELECT p.id, p.title, p.content, p.author_id, u.name AS author_name, p.views, p.created_at, p.updated_at FROM posts p JOIN users u ON u.id = p.author_id'
const byId = db.prepare(`${SELECT} WHERE p.id = ?`)
const firstPage = db.prepare(`${SELECT} ORDER BY p.created_at DESC, p.id DESC LIMIT ?`)
const nextPage = db.prepare(`${SELECT} WHERE (p.created_at, p.id) < (?, ?) ORDER BY p.created_at DESC, p.id DESC LIMIT ?`)

// Times are stored as ISO 8601 text, which is what the API sends.
const toPost = (row: PostRow) => ({
  id: row.id,
  title: row.title,
  content: row.content,
  author: { id: row.author_id, name: row.author_name },
  views: row.views,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

const app = express()
app.use(pinoHttp())

app.get('/health/ready', (_req, res) => { res.json({ status: 'ok' }) })

app.get('/v1/posts/:id', (req, res) => {
  const id = Number(req.params.id)
  if (!Number.isSafeInteger(id) || id < 1) {
    res.status(400).json({ error: 'id must be a positive integer' })
    return
  }
  const row = byId.get(id) as PostRow | undefined
  if (row === undefined) {
    res.status(404).json({ error: 'post not found' })
    return
  }
  res.json(toPost(row))
})

app.get('/v1/posts', (req, res) => {
  const limit = Math.min(Math.max(Number(req.query.limit ?? 20) || 20, 1), 100)
  let rows: PostRow[]
  if (typeof req.query.cursor === 'string') {
    const [createdAt, id] = JSON.parse(Buffer.from(req.query.cursor, 'base64url').toString()) as [string, number]
    rows = nextPage.all(createdAt, id, limit + 1) as PostRow[]
  } else {
    rows = firstPage.all(limit + 1) as PostRow[]
  }
  if (rows.length > limit) {
    rows.length = limit
    const last = rows[limit - 1]!
    res.links({ next: `/v1/posts?limit=${limit}&cursor=${Buffer.from(JSON.stringify([last.created_at, last.id])).toString('base64url')}` })
  }
  res.json(rows.map(toPost))
})

app.listen(Number(process.env.PEER_PORT ?? 0), '127.0.0.1')
