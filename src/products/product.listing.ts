import { Type, type Static } from '@sinclair/typebox'
import type { FieldError } from '../http/errors.js'
import { listFingerprint, SortedPageQuery } from '../http/sorted-paging.js'
import { createdAtKey } from '../http/created-range.js'
import { searchTerms, type SearchTerms } from '../search/search-terms.js'
import { SearchParameter } from '../search/search-parameter.js'
import { rankKey } from '../search/relevance.js'
import { CATEGORIES, CategorySchema, MAX_PRICE, type Category } from './product.schemas.js'
import type { ProductRow } from './product.table.js'

// What GET /v1/products can be asked: filters (combined with AND) and one of a few sorts. Each
// sort is a keyset order over an index (migration 009): the sort column, then the id as the
// tie-breaker in the same direction, so the order is total and a page is one range scan.

export const PRODUCT_SORTS = ['-createdAt', 'createdAt', 'price', '-price', 'name'] as const
export type ProductSort = typeof PRODUCT_SORTS[number]
export const DEFAULT_PRODUCT_SORT: ProductSort = '-createdAt'

const PRICE_BOUND = 'an integer number of the smallest currency unit, 1 to 1,000,000,000'

export const ProductListQuery = Type.Object({
  ...SortedPageQuery,
  category: Type.Optional(Type.Array(CategorySchema, {
    minItems: 1,
    maxItems: CATEGORIES.length,
    description: `Only products of these categories; repeat the parameter for several (\`category=BOOK&category=FOOD\`). Each one of ${CATEGORIES.join(', ')}.`,
    examples: [['BOOK']]
  })),
  onSale: Type.Optional(Type.Boolean({ description: '`true`: only products that can be ordered; `false`: only those that cannot.', examples: [true] })),
  inStock: Type.Optional(Type.Boolean({ description: '`true`: only products with stock above 0; `false`: only those with none.', examples: [true] })),
  minPrice: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PRICE, description: `Lowest price, inclusive: ${PRICE_BOUND}; at most \`maxPrice\`.`, examples: [500] })),
  maxPrice: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PRICE, description: `Highest price, inclusive: ${PRICE_BOUND}.`, examples: [2000] })),
  q: Type.Optional(SearchParameter('the name', { words: 'paper notebook', prefix: 'note', phrase: 'paper notebook', stem: '`notebooks` finds `notebook`' })),
  sort: Type.Optional(Type.Unsafe<ProductSort>({
    type: 'string',
    enum: [...PRODUCT_SORTS],
    default: DEFAULT_PRODUCT_SORT,
    description: 'The order: `-createdAt` newest first (the default without `q`), `createdAt` oldest first, `price` cheapest first, `-price` dearest first, `name` by name (Unicode code point order: `Z` before `a`). Ties are broken by id in the same direction.',
    examples: ['price']
  }))
})
export type ProductListQueryType = Static<typeof ProductListQuery>

/** The rule between parameters, checked with the schema's (see validation.ts). */
export function productQueryRules (query: Record<string, unknown>): FieldError[] {
  const { minPrice, maxPrice } = query
  if (typeof minPrice === 'number' && typeof maxPrice === 'number' && minPrice > maxPrice) {
    return [{ field: 'minPrice', message: 'must not be greater than maxPrice' }]
  }
  return []
}

export interface ProductFilters {
  category?: Category[]
  onSale?: boolean
  inStock?: boolean
  minPrice?: number
  maxPrice?: number
  /** The words of `q`. */
  search?: SearchTerms
}

/** Products sort by relevance when searched for without a sort. */
export type ProductOrderName = ProductSort | 'relevance'

export interface ProductListing {
  filters: ProductFilters
  sort: ProductOrderName
  /** Binds a cursor to this sort and these filters. */
  fingerprint: string
}

export function productListing (query: ProductListQueryType): ProductListing {
  const filters: ProductFilters = {
    category: query.category === undefined ? undefined : [...new Set(query.category)],
    onSale: query.onSale,
    inStock: query.inStock,
    minPrice: query.minPrice,
    maxPrice: query.maxPrice,
    // The schema has refused a `q` without a word (HAS_WORD).
    search: query.q === undefined ? undefined : searchTerms(query.q)
  }
  const sort = query.sort ?? (query.q === undefined ? DEFAULT_PRODUCT_SORT : 'relevance')
  return { filters, sort, fingerprint: listFingerprint({ ...filters, search: undefined, q: query.q, sort }) }
}

/**
 * A sort's key (a column, or the search rank), its direction, and its key as a cursor carries it
 * (text) and reads it back.
 */
export interface ProductOrder {
  key: 'created_at' | 'price' | 'name' | 'rank'
  direction: 'asc' | 'desc'
  keyOf: (row: RankedProductRow) => string
  /** The key's value a cursor's text stands for, or undefined when the text is not one. */
  readKey: (key: string) => string | bigint | undefined
}

/** A product row as a list reads it: with its search rank when it is sorted by relevance. */
export type RankedProductRow = ProductRow & { rank?: bigint | number }

const byCreatedAt = { key: 'created_at', ...createdAtKey } as const
const byPrice = { key: 'price', keyOf: (row: RankedProductRow) => row.price.toString(), readKey: (key: string) => /^[1-9][0-9]{0,9}$/.test(key) ? BigInt(key) : undefined } as const

export const PRODUCT_ORDERS: Record<ProductOrderName, ProductOrder> = {
  '-createdAt': { ...byCreatedAt, direction: 'desc' },
  createdAt: { ...byCreatedAt, direction: 'asc' },
  price: { ...byPrice, direction: 'asc' },
  '-price': { ...byPrice, direction: 'desc' },
  name: { key: 'name', direction: 'asc', keyOf: (row) => row.name, readKey: (key) => key.length <= 100 ? key : undefined },
  relevance: { key: 'rank', direction: 'desc', ...rankKey }
}
