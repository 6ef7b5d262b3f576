import { execute, precompiled } from '../db/compiled.js'
import type { Executor } from '../db/schema.js'
import { precompiledLock } from '../db/lock.js'
import type { DialectName } from '../db/database.js'
import type { RowWrite } from '../events/recorded-write.js'
import type { PostRow } from './post.table.js'
import { sql, type CompiledQuery, type RawBuilder } from 'kysely'
import type { PagePosition } from '../http/sorted-paging.js'
import { fts5Query, tsQuery } from '../search/search-terms.js'
import { fts5Occurrences, rankValue } from '../search/relevance.js'
import { POST_ORDERS, type PostListing, type PostOrderName, type RankedPostRow } from './post.listing.js'

// Every read returns the row with its author's name, which is what the representation (and so
// the ETag) is made of. The name comes from a scalar subquery rather than a join, so that the
// planner of either database has one obvious plan for a page: walk the sort's index and stop
// after `limit` rows, looking up one name per row.
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

/**
 * `limit` posts of a list in its order, after `position` when given: the filters as conditions,
 * the sort key and the id compared as one row value with the cursor's, so each page is a range of
 * the sort's index (migration 012) at any depth; with an author, of the (author_id, created_at,
 * id) index under a sort by time. No OFFSET, no COUNT.
 *
 * A search (`q`) is a condition on the database's text index of title and content (migration
 * 012); sorted by relevance, the rank is the row's own (search/relevance.ts).
 */
export function listPostsQuery (db: Executor, dialect: DialectName, listing: PostListing, limit: number, position: PagePosition<string | bigint> | undefined) {
  const order = POST_ORDERS[listing.sort]
  const { search } = listing
  const postgres = dialect === 'postgres'
  let query = selectPosts(db)
  let rank: RawBuilder<number | bigint> | undefined
  if (search !== undefined && postgres && order.key === 'rank') {
    const matches = tsQuery(search)
    query = query.innerJoin(sql<{ post_id: bigint, document: unknown }>`post_search`.as('post_search'), (join) => join.onRef('post_search.post_id', '=', 'posts.id'))
      .where(sql<boolean>`post_search.document @@ ${matches}`)
    rank = sql`ts_rank(post_search.document, ${matches})`
  } else if (search !== undefined && postgres) {
    query = query.where(sql<boolean>`posts.id in (select post_id from post_search where document @@ ${tsQuery(search)})`)
  } else if (search !== undefined && order.key === 'rank') {
    // The text index drives the query: highlight() needs it in the FROM clause with its MATCH.
    query = query.innerJoin(sql<{ rowid: bigint }>`posts_search`.as('posts_search'), (join) => join.onRef('posts_search.rowid', '=', 'posts.id'))
      .where(sql<boolean>`posts_search match ${fts5Query(search)}`)
    rank = fts5Occurrences('posts_search', 2)
  } else if (search !== undefined) {
    query = query.where(sql<boolean>`posts.id in (select rowid from posts_search where posts_search match ${fts5Query(search)})`)
  }
  if (listing.authorId !== undefined) query = query.where('posts.author_id', '=', listing.authorId)
  if (listing.createdAfter !== undefined) query = query.where('posts.created_at', '>', listing.createdAfter)
  if (listing.createdBefore !== undefined) query = query.where('posts.created_at', '<', listing.createdBefore)
  const sortKey = rank ?? sql.ref(`posts.${order.key}`)
  if (position !== undefined) {
    const key = order.key === 'rank' ? rankValue(position.key as string, postgres) : sql`${position.key}`
    query = query.where(sql<boolean>`(${sortKey}, posts.id) ${sql.raw(order.direction === 'desc' ? '<' : '>')} (${key}, ${position.id})`)
  }
  const ranked = rank === undefined ? query : query.select(rank.as('rank'))
  return ranked.orderBy(sortKey, order.direction).orderBy('posts.id', order.direction).limit(limit)
}

// The lists without a search or time bounds (each sort, with or without an author, first page or
// after a cursor) are the ones read most: each such shape is compiled once (db/compiled.ts), its
// arguments the page size, then the author, then the cursor's key and id, those it has.
type PlainPage = (db: Executor, ...args: unknown[]) => CompiledQuery<RankedPostRow>
const plainPages = new Map<string, PlainPage>()

function plainPage (dialect: DialectName, sort: PostOrderName, author: boolean, after: boolean): PlainPage {
  const shape = `${dialect} ${sort} ${author} ${after}`
  let page = plainPages.get(shape)
  if (page === undefined) {
    page = precompiled((db: Executor, ...args: unknown[]) => {
      const next = (() => { let i = 0; return () => args[i++] })()
      const limit = next() as number
      const authorId = author ? next() as bigint : undefined
      const position = after ? { key: next() as string | bigint, id: next() as bigint } : undefined
      return listPostsQuery(db, dialect, { sort, authorId, fingerprint: '' }, limit, position)
    })
    plainPages.set(shape, page)
  }
  return page
}

export async function listPosts (db: Executor, dialect: DialectName, listing: PostListing, limit: number, position: PagePosition<string | bigint> | undefined): Promise<RankedPostRow[]> {
  if (listing.search !== undefined || listing.createdAfter !== undefined || listing.createdBefore !== undefined) {
    return await listPostsQuery(db, dialect, listing, limit, position).execute()
  }
  const args: unknown[] = [limit]
  if (listing.authorId !== undefined) args.push(listing.authorId)
  if (position !== undefined) args.push(position.key, position.id)
  const page = plainPage(dialect, listing.sort, listing.authorId !== undefined, position !== undefined)
  return (await execute(db, page(db, ...args))).rows
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
