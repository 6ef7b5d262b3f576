import { Type, type Static } from '@sinclair/typebox'
import { IdString } from '../http/schemas.js'
import { listFingerprint, SortedPageQuery } from '../http/sorted-paging.js'
import { createdAtKey, createdRange, createdRangeQuery, createdRangeRule, type CreatedRange } from '../http/created-range.js'
import { SearchParameter } from '../search/search-parameter.js'
import { searchTerms, type SearchTerms } from '../search/search-terms.js'
import type { PostWithAuthor } from './post.table.js'

// What GET /v1/posts can be asked: filters (combined with AND) and one of three sorts, each a
// keyset order over an index (migration 012): the sort key, then the id in the same direction.

export const POST_SORTS = ['-createdAt', 'createdAt', '-views'] as const
export type PostSort = typeof POST_SORTS[number]
export const DEFAULT_POST_SORT: PostSort = '-createdAt'

export const PostListQuery = Type.Object({
  ...SortedPageQuery,
  authorId: Type.Optional(IdString('Only posts by this user (an id). An unknown user has no posts: the list is empty.')),
  q: Type.Optional(SearchParameter('the title or the content', { words: 'postgres replication', prefix: 'replica', phrase: 'streaming replication', stem: '`replicas` finds `replica`' })),
  ...createdRangeQuery('posts'),
  sort: Type.Optional(Type.Unsafe<PostSort>({
    type: 'string',
    enum: [...POST_SORTS],
    default: DEFAULT_POST_SORT,
    description: 'The order: `-createdAt` newest first (the default without `q`), `createdAt` oldest first, `-views` most viewed first. Ties are broken by id in the same direction.',
    examples: ['-views']
  }))
})
export type PostListQueryType = Static<typeof PostListQuery>

/** The rule between parameters, checked with the schema's (see validation.ts). */
export const postQueryRules = createdRangeRule

/** Posts sort by relevance when searched for without a sort. */
export type PostOrderName = PostSort | 'relevance'

export interface PostListing extends CreatedRange {
  authorId?: bigint
  /** The words of `q`. */
  search?: SearchTerms
  sort: PostOrderName
  /** Binds a cursor to this sort and these filters. */
  fingerprint: string
}

export function postListing (query: PostListQueryType): PostListing {
  const range = createdRange(query)
  const sort = query.sort ?? (query.q === undefined ? DEFAULT_POST_SORT : 'relevance')
  return {
    ...range,
    authorId: query.authorId === undefined ? undefined : BigInt(query.authorId),
    // The schema has refused a `q` without a word (HAS_WORD).
    search: query.q === undefined ? undefined : searchTerms(query.q),
    sort,
    fingerprint: listFingerprint({ ...range, authorId: query.authorId, q: query.q, sort })
  }
}

/** A post row as a list reads it: with its rank (1 when the title matches) when sorted by relevance. */
export type RankedPostRow = PostWithAuthor & { rank?: bigint | number }

/** A sort's key (a column, or the search rank), its direction, and its key as a cursor carries it. */
export interface PostOrder {
  key: 'created_at' | 'views' | 'rank'
  direction: 'asc' | 'desc'
  keyOf: (row: RankedPostRow) => string
  /** The key's value a cursor's text stands for, or undefined when the text is not one. */
  readKey: (key: string) => string | bigint | undefined
}

export const POST_ORDERS: Record<PostOrderName, PostOrder> = {
  '-createdAt': { key: 'created_at', direction: 'desc', ...createdAtKey },
  createdAt: { key: 'created_at', direction: 'asc', ...createdAtKey },
  '-views': { key: 'views', direction: 'desc', keyOf: (row) => row.views.toString(), readKey: (key) => /^(0|[1-9][0-9]{0,18})$/.test(key) ? BigInt(key) : undefined },
  // Relevance: whether the title has every term, then the creation time (post.repository.ts).
  relevance: {
    key: 'rank',
    direction: 'desc',
    keyOf: (row) => `${String(row.rank)}|${createdAtKey.keyOf(row)}`,
    readKey: (key) => /^[01]\|/.test(key) && createdAtKey.readKey(key.slice(2)) !== undefined ? key : undefined
  }
}

/** The parts of a relevance cursor's key (one that readKey accepted). */
export function readRelevanceKey (key: string): { titleMatch: number, createdAt: string } {
  return { titleMatch: Number(key[0]), createdAt: key.slice(2) }
}
