import { execute, precompiled } from '../db/compiled.js'
import type { Executor } from '../db/schema.js'
import { precompiledLock } from '../db/lock.js'
import type { DialectName } from '../db/database.js'
import type { RowWrite } from '../events/recorded-write.js'
import type { PostRow } from './post.table.js'

// Every read returns the row with its author's name, which is what the representation (and so
// the ETag) is made of. The name comes from a scalar subquery rather than a join, so that the
// only table in FROM is posts and the planner of either database has one obvious plan for a
// page: walk the index in id order and stop after `limit` rows, looking up one name per row.
export type PostWithAuthor = PostRow & { author_name: string }

// The columns, named rather than `*`: the hot queries run as prepared statements
// (db/statement-names.ts).
const POST_COLUMNS = ['posts.id', 'posts.author_id', 'posts.title', 'posts.content', 'posts.views', 'posts.created_at', 'posts.updated_at'] as const
const POST_ROW_COLUMNS = POST_COLUMNS.map((column) => column.slice('posts.'.length))

function selectPosts (db: Executor) {
  return db.selectFrom('posts').select((eb) => [
    ...POST_COLUMNS,
    eb.selectFrom('users').select('users.name').whereRef('users.id', '=', 'posts.author_id').$asScalar().$notNull().as('author_name')
  ])
}

const postById = precompiled((db: Executor, id: bigint) => selectPosts(db).where('posts.id', '=', id))

export async function findPost (db: Executor, id: bigint): Promise<PostWithAuthor | undefined> {
  return (await execute(db, postById(db, id))).rows[0]
}

const postForUpdate = precompiledLock((db: Executor, id: bigint) => db.selectFrom('posts').select(POST_COLUMNS).where('posts.id', '=', id))
const authorName = precompiled((db: Executor, id: bigint) => db.selectFrom('users').select('users.name').where('users.id', '=', id))

/**
 * The post, its row locked for the rest of the transaction (read-check-write). Only the posts
 * row is locked; the author's name is read after it, in the same transaction.
 */
export async function findPostForUpdate (trx: Executor, dialect: DialectName, id: bigint): Promise<PostWithAuthor | undefined> {
  const post = (await execute(trx, postForUpdate(trx, dialect, id))).rows[0]
  if (post === undefined) return undefined
  const author = (await execute(trx, authorName(trx, post.author_id))).rows[0]!
  return { ...post, author_name: author.name }
}

export interface PostPage {
  /** Only posts with an id below this one (the cursor), or from the newest when undefined. */
  before: bigint | undefined
  /** Rows to fetch: the page size plus one, to learn whether another page follows. */
  take: number
  authorId: bigint | undefined
}

/**
 * Newest first by id, one index range scan at any depth: `WHERE id < cursor ORDER BY id DESC
 * LIMIT n` on the primary key, or on (author_id, id) with the author filter. No OFFSET, no COUNT.
 */
export function listPostsQuery (db: Executor, page: PostPage) {
  let query = selectPosts(db)
  if (page.before !== undefined) query = query.where('posts.id', '<', page.before)
  if (page.authorId === undefined) return query.orderBy('posts.id', 'desc').limit(page.take)
  // With the author fixed, ordering by (author_id, id) is the same order, spelled exactly as the
  // (author_id, id) index, which serves both the filter and the order.
  return query.where('posts.author_id', '=', page.authorId)
    .orderBy('posts.author_id', 'desc').orderBy('posts.id', 'desc').limit(page.take)
}

// The four shapes of a page, each compiled once.
const pages = {
  first: precompiled((db: Executor, take: number) => listPostsQuery(db, { before: undefined, take, authorId: undefined })),
  after: precompiled((db: Executor, before: bigint, take: number) => listPostsQuery(db, { before, take, authorId: undefined })),
  authorFirst: precompiled((db: Executor, authorId: bigint, take: number) => listPostsQuery(db, { before: undefined, take, authorId })),
  authorAfter: precompiled((db: Executor, authorId: bigint, before: bigint, take: number) => listPostsQuery(db, { before, take, authorId }))
}

export async function listPosts (db: Executor, { before, take, authorId }: PostPage): Promise<PostWithAuthor[]> {
  const query = authorId === undefined
    ? (before === undefined ? pages.first(db, take) : pages.after(db, before, take))
    : (before === undefined ? pages.authorFirst(db, authorId, take) : pages.authorAfter(db, authorId, before, take))
  return (await execute(db, query)).rows
}

const insertPostQuery = precompiled((db: Executor, authorId: bigint, title: string, content: string, now: string) =>
  db.insertInto('posts').values({ author_id: authorId, title, content, created_at: now, updated_at: now }).returning(POST_COLUMNS))

/** The insert of a post (run with its event by writeWithEvents); a new post has no views. */
export function insertPost (db: Executor, post: { authorId: bigint, title: string, content: string, now: string }): RowWrite<PostRow> {
  return { query: insertPostQuery(db, post.authorId, post.title, post.content, post.now), columns: POST_ROW_COLUMNS }
}

// A member left out (sent as NULL) keeps its value: one statement for every PUT and PATCH,
// whichever members they change.
const updatePostQuery = precompiled((db: Executor, id: bigint, title: string | null, content: string | null, now: string) =>
  db.updateTable('posts')
    .set((eb) => ({
      title: eb.fn.coalesce(eb.val(title), eb.ref('title')),
      content: eb.fn.coalesce(eb.val(content), eb.ref('content')),
      updated_at: now
    }))
    .where('id', '=', id)
    .returning(POST_COLUMNS))

/** The update of a post's title and content (run with its event by writeWithEvents). */
export function updatePost (db: Executor, id: bigint, changes: { title?: string, content?: string, now: string }): RowWrite<PostRow> {
  return { query: updatePostQuery(db, id, changes.title ?? null, changes.content ?? null, changes.now), columns: POST_ROW_COLUMNS }
}

export async function deletePost (db: Executor, id: bigint): Promise<void> {
  await db.deleteFrom('posts').where('id', '=', id).execute()
}

/**
 * Counts one view in a single statement, so concurrent views never lose an increment on either
 * database; undefined when the post does not exist. The post's updatedAt does not move.
 */
const countViewQuery = precompiled((db: Executor, id: bigint) =>
  db.updateTable('posts').set((eb) => ({ views: eb('views', '+', 1n) })).where('id', '=', id).returning('views'))

export async function countView (db: Executor, id: bigint): Promise<bigint | undefined> {
  return (await execute(db, countViewQuery(db, id))).rows[0]?.views
}
