import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { sql } from 'kysely'
import { plansOf } from '../query-plans.js'
import { buildTestApp, dialect } from '../helper.js'
import { PRODUCT_ORDERS, PRODUCT_SORTS, productListing, type ProductListQueryType } from '../../src/products/product.listing.js'
import { listProducts, listProductsQueries } from '../../src/products/product.repository.js'
import { write } from '../../src/db/write.js'

// The query plan of every sort, alone and under each filter and a search, read from the database
// for the very query the list runs, first page and deep page: never a scan of the whole table;
// the rows come in the sort's order from its index (read until the page is full), or, where the
// planner finds it cheaper, from a range of another index (a narrow price range) or from the text
// index (a search) and then sorted. On PostgreSQL sequential scans are priced out, so that
// the plan shows that an index can serve the query on a table of any size (on a table this small
// the planner would rightly read it whole).

const { app, close } = await buildTestApp()
after(close)

before(async () => {
  const rows = Array.from({ length: 2000 }, (_, i) => {
    const at = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString()
    return { name: `${['Red', 'Blue', 'Green'][i % 3]} ${['notebook', 'lamp', 'kettle', 'shoe'][i % 4]} ${i}`, price: 100 + (i * 37) % 5000, category: ['BOOK', 'FOOD', 'HOME'][i % 3]!, stock: i % 5, on_sale: i % 7 === 0 ? 0 : 1, created_at: at, updated_at: at }
  })
  for (let i = 0; i < rows.length; i += 500) await write(app.db, async (trx) => await trx.insertInto('products').values(rows.slice(i, i + 500)).execute())
  await write(app.db, async (trx) => await sql`analyze`.execute(trx))
})

const FILTERS = ['', 'category=BOOK', 'category=BOOK&category=FOOD', 'onSale=false', 'inStock=true', 'minPrice=300&maxPrice=900', 'category=HOME&onSale=true&inStock=false&maxPrice=2000', 'q=notebook', 'q=note*&category=BOOK', 'q=%22red%20lamp%22']

function parsed (query: string): ProductListQueryType {
  const result: Record<string, unknown> = {}
  for (const [name, value] of new URLSearchParams(query)) {
    if (name === 'category') result.category = [...(result.category as string[] | undefined ?? []), value]
    else if (name === 'onSale' || name === 'inStock') result[name] = value === 'true'
    else if (name === 'minPrice' || name === 'maxPrice') result[name] = Number(value)
    else result[name] = value
  }
  return result as ProductListQueryType
}

async function plans (query: string, deep: boolean): Promise<string[][]> {
  const listing = productListing(parsed(query))
  const order = PRODUCT_ORDERS[listing.sort]
  let position
  if (deep) {
    const rows = await listProducts(app.db, dialect, listing, 1000, undefined)
    const row = rows[Math.floor(rows.length / 2)]
    // Tied: the page starts inside a run of equal keys, so every query a deep page can run is shown.
    if (row !== undefined) position = { key: order.readKey(order.keyOf(row))!, id: row.id, tied: true }
  }
  return await plansOf(app, listProductsQueries(app.db, dialect, listing, 21, position))
}

for (const filter of FILTERS) {
  const sorts = filter.startsWith('q=') ? [undefined, ...PRODUCT_SORTS] : PRODUCT_SORTS
  for (const sort of sorts) {
    const query = [filter, sort === undefined ? '' : `sort=${sort}`].filter((part) => part !== '').join('&')
    test(`plan of ?${query}`, async () => {
      for (const deep of [false, true]) {
        for (const lines of await plans(query, deep)) {
        const text = lines.join('\n')
        const where = `${deep ? 'deep' : 'first'} page of ?${query}:\n${text}`
        const sortIndex = `products_${PRODUCT_ORDERS[sort ?? '-createdAt'].key}_id_idx`
        if (dialect === 'sqlite') {
          assert.ok(!lines.some((line) => /^SCAN products$/.test(line)), `a full scan, ${where}`)
          const inOrder = text.includes(`USING INDEX ${sortIndex}`) && !text.includes('USE TEMP B-TREE FOR ORDER BY')
          const bounded = /^SEARCH products USING/m.test(text) || text.includes('products_search VIRTUAL TABLE INDEX')
          assert.ok(inOrder || bounded, `neither the sort's index in order nor a range of an index, ${where}`)
        } else {
          assert.ok(!text.includes('Seq Scan on products'), `a full scan, ${where}`)
          const inOrder = new RegExp(`Index Scan( Backward)? using ${sortIndex}`).test(text) && !/^\s*(->\s*)?Sort\b/m.test(text)
          const bounded = text.includes('Index Cond') || text.includes('products_search_document_idx')
          assert.ok(inOrder || bounded, `neither the sort's index in order nor a range of an index, ${where}`)
        }
        }
      }
    })
  }
}
