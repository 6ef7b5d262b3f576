import { execute, firstRowSoon, precompiled, rowsSoon, writeStatement } from '../db/compiled.js'
import type { Database, Db, Executor } from '../db/schema.js'
import { precompiledLock } from '../db/lock.js'
import type { DialectName } from '../db/database.js'
import type { RowWrite } from '../events/recorded-write.js'
import type { PostRow, PostWithAuthor } from './post.table.js'
import { sql, type CompiledQuery, type ExpressionBuilder, type RawBuilder, type SelectQueryBuilder } from 'kysely'
import type { PagePosition } from '../http/sorted-paging.js'
import { boundsAfterCursor } from '../http/created-range.js'
import { pageAfter, readPage, readShapedPage, shapedPosition, type PageStart } from '../db/keyset.js'
import { fts5Query, tsQuery, tsQueryOnce } from '../search/search-terms.js'
import { POST_ORDERS, readRelevanceKey, type PostListing, type PostOrderName, type RankedPostRow } from './post.listing.js'

// Every read returns the row with its author's name (PostWithAuthor), which is what the
// representation (and so the ETag) is made of. The name comes from a scalar subquery rather than
// a join, so that the planner of either database has one obvious plan for a page: walk the
// sort's index and stop after `limit` rows, looking up one name per row.

// The columns, named rather than `*`: the hot queries run as prepared statements
// (db/statement-names.ts).
const POST_COLUMNS = ['posts.id', 'posts.author_id', 'posts.title', 'posts.content', 'posts.views', 'posts.created_at', 'posts.updated_at', 'posts.images'] as const
const POST_ROW_COLUMNS = POST_COLUMNS.map((column) => column.slice('posts.'.length))

function selectPosts (db: Executor) {
  return db.selectFrom('posts').select(selectedColumns)
}

const postById = precompiled((db: Executor, id: bigint) => selectPosts(db).where('posts.id', '=', id))

export async function findPost (db: Executor, id: bigint): Promise<PostWithAuthor | undefined> {
  return await findPostSoon(db, id)
}

/** The post at once on SQLite, its promise on PostgreSQL (db/compiled.ts firstRowSoon). */
export function findPostSoon (db: Executor, id: bigint): PostWithAuthor | undefined | Promise<PostWithAuthor | undefined> {
  return firstRowSoon(db, postById(db, id))
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

/**
 * The queries of `limit` posts of a list in its order, after `position` when given (one, or two
 * on SQLite: db/keyset.ts): the filters as conditions, the sort key and the id compared with the
 * cursor's, so each page is a range of the sort's index (migration 012) at any depth; with an
 * author, of the (author_id, created_at, id) index under a sort by time. No OFFSET, no COUNT.
 *
 * A search (`q`) is a condition on the database's text index of title and content (migration
 * 012). Sorted by relevance, posts whose title has every term come first, then those that have
 * them only with the content, each part newest first: a rank of the row alone, so a cursor keeps
 * its place as posts are added (search/relevance.ts), and cheap to compute for every match (the
 * frequency of the terms, as products are ranked, would parse each matching post's content
 * again: 54 ms for a word in 7 % of 100,000 posts).
 */
export function listPostsQueries (db: Executor, dialect: DialectName, listing: PostListing, limit: number, position: PagePosition<string | bigint> | undefined) {
  const order = POST_ORDERS[listing.sort]
  const { search } = listing
  const postgres = dialect === 'postgres'
  const direction = order.direction
  let query = db.selectFrom('posts')
  // By relevance: whether the title has every term (1 or 0), for every match while they are
  // sorted, and again for the page's rows. (On PostgreSQL a join of post_search instead of the
  // correlated lookup let the planner pick a parallel merge: 44 ms against 33 for a common word.)
  let titleMatch: RawBuilder<number> | undefined
  if (search !== undefined && postgres) {
    query = query.where(sql<boolean>`posts.id in (select post_id from post_search where document @@ ${tsQuery(search)})`)
    if (order.key === 'rank') titleMatch = sql`(select (title_document @@ ${tsQueryOnce(search)})::int from post_search where post_id = posts.id)`
  } else if (search !== undefined) {
    query = query.where(sql<boolean>`posts.id in (select rowid from posts_search where posts_search match ${fts5Query(search)})`)
    if (order.key === 'rank') titleMatch = sql`(posts.id in (select rowid from posts_search where posts_search match ${`title : (${fts5Query(search)})`}))`
  }
  if (listing.authorId !== undefined) query = query.where('posts.author_id', '=', listing.authorId)
  const range = order.key === 'created_at' ? boundsAfterCursor(listing, direction, position?.key as string | undefined) : listing
  if (range.createdAfter !== undefined) query = query.where('posts.created_at', '>', range.createdAfter)
  if (range.createdBefore !== undefined) query = query.where('posts.created_at', '<', range.createdBefore)

  if (titleMatch !== undefined) {
    // By relevance: (title match, creation time, id), all descending; the matches sorted by
    // their ids and keys only, the page's rows read after.
    if (position !== undefined) {
      const { titleMatch: rank, createdAt } = readRelevanceKey(position.key as string)
      query = query.where(sql<boolean>`(${titleMatch}, posts.created_at, posts.id) < (${rank}, ${createdAt}, ${position.id})`)
    }
    const page = query.select('posts.id').orderBy(titleMatch, 'desc').orderBy('posts.created_at', 'desc').orderBy('posts.id', 'desc').limit(limit)
    return [postsIn(db, page).select(titleMatch.as('rank')).orderBy(sql.ref('rank'), 'desc').orderBy('posts.created_at', 'desc').orderBy('posts.id', 'desc')]
  }
  const key = sql.ref(`posts.${order.key}`)
  if (search !== undefined && !postgres) {
    // A search on SQLite: the matches are sorted by their ids and keys only, and the page's rows
    // read after (SQLite would otherwise carry every match's whole row, and its author's name,
    // through the sort: 18 ms for a word in 7 % of 100,000 posts).
    if (position !== undefined) query = query.where(sql<boolean>`(${key}, posts.id) ${sql.raw(direction === 'desc' ? '<' : '>')} (${position.key}, ${position.id})`)
    const page = query.select('posts.id').orderBy(key, direction).orderBy('posts.id', direction).limit(limit)
    return [postsIn(db, page).orderBy(key, direction).orderBy('posts.id', direction)]
  }
  const listed = query.select(selectedColumns)
  if (position !== undefined) return pageAfter(dialect, listed, { table: 'posts', column: order.key, direction }, position, limit)
  return [listed.orderBy(key, direction).orderBy('posts.id', direction).limit(limit)]
}

/** The columns of a listed post: the row and its author's name. */
function selectedColumns (eb: ExpressionBuilder<Database, 'posts'>) {
  return [...POST_COLUMNS, eb.selectFrom('users').select('users.name').whereRef('users.id', '=', 'posts.author_id').$asScalar().$notNull().as('author_name')]
}

/** The posts whose ids a subquery selects, with their authors' names. */
function postsIn (db: Executor, ids: SelectQueryBuilder<Database, any, { id: bigint }>) {
  return db.selectFrom('posts').select(selectedColumns).where('posts.id', 'in', ids)
}

// The lists without a search or time bounds (each sort, with or without an author, first page or
// after a cursor) are the ones read most: each query of such a shape is compiled once
// (db/compiled.ts), its arguments the page size, then the author, then the cursor's key and id,
// those it has.
type PlainPage = (db: Executor, ...args: unknown[]) => CompiledQuery<RankedPostRow>
const plainPages = new Map<string, PlainPage>()

function plainPage (dialect: DialectName, sort: PostOrderName, author: boolean, start: PageStart, part: number): PlainPage {
  const shape = `${dialect} ${sort} ${author} ${start} ${part}`
  let page = plainPages.get(shape)
  if (page === undefined) {
    page = precompiled((db: Executor, ...args: unknown[]) => {
      const limit = args[0] as number
      const authorId = author ? args[1] as bigint : undefined
      const position = shapedPosition(dialect, start, part, args.slice(author ? 2 : 1))
      return listPostsQueries(db, dialect, { sort, authorId, fingerprint: '' }, limit, position)[part]!
    }) as PlainPage
    plainPages.set(shape, page)
  }
  return page
}

export async function listPosts (db: Executor, dialect: DialectName, listing: PostListing, limit: number, position: PagePosition<string | bigint> | undefined): Promise<RankedPostRow[]> {
  return await listPostsSoon(db, dialect, listing, limit, position)
}

/** The page's rows: at once on SQLite for a list with no search and no time range (db/compiled.ts rowsSoon), else their promise. */
export function listPostsSoon (db: Executor, dialect: DialectName, listing: PostListing, limit: number, position: PagePosition<string | bigint> | undefined): RankedPostRow[] | Promise<RankedPostRow[]> {
  if (listing.search !== undefined || listing.createdAfter !== undefined || listing.createdBefore !== undefined) {
    const queries = listPostsQueries(db, dialect, listing, limit, position)
    return readPage(queries, limit, async (query) => await query.execute() as RankedPostRow[])
  }
  const args: unknown[] = listing.authorId === undefined ? [limit] : [limit, listing.authorId]
  return readShapedPage(dialect, position, limit, (start, part, cursor) =>
    rowsSoon(db, plainPage(dialect, listing.sort, listing.authorId !== undefined, start, part)(db, ...args, ...cursor)))
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

export async function countView (db: Db, id: bigint): Promise<bigint | undefined> {
  return (await writeStatement(db, countViewQuery(db, id))).rows[0]?.views
}

/** Writes the post's images (their JSON, files/image.representation.ts). */
export async function setPostImages (db: Executor, id: bigint, images: string, now: string): Promise<void> {
  await db.updateTable('posts').set({ images, updated_at: now }).where('id', '=', id).execute()
}
