import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../events/actor.js'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { Type } from '@sinclair/typebox'
import { nowIso } from '../db/types.js'
import { authenticate, requireAdmin } from '../auth/authentication.js'
import { ApiError } from '../http/errors.js'
import { sendTagged, sendWithTag } from '../http/etag.js'
import { guardedWrite } from '../http/guarded-write.js'
import { write } from '../db/write.js'
import { recordEvent } from '../events/event.repository.js'
import { answerPage, type Page } from '../http/paging.js'
import { sortedPage } from '../http/sorted-paging.js'
import { PRODUCT_ORDERS, ProductListQuery, productListing, productQueryRules, type ProductListQueryType } from './product.listing.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, ETAG_HEADER, IdParams, IfMatchHeaders, IfNoneMatchHeaders, LINK_HEADER, LOCATION_HEADER, NotModified, ref, success } from '../http/schemas.js'
import { findProductById, findProductSoon, insertProduct, listProductsSoon, lockProduct, updateProduct } from './product.repository.js'
import { toProduct, toProductJson } from './product.representation.js'
import { Product, ProductCreateBody, ProductPatchBody, WRITABLE_MEMBERS, type ProductType } from './product.schemas.js'
import type { ProductRow } from './product.table.js'


const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect } = app
  const base = app.config.publicUrl
  const representation = (row: ProductRow): ProductType => toProduct(row, base)
  const ProductList = Type.Array(ref(Product), { maxItems: 100 })

  /**
   * The page of the list a valid query asks for, each row `present`ed, at once where the database
   * answers at once (product.repository.ts listProductsSoon), else its promise; a cursor of
   * another list is refused here (400 CURSOR_MISMATCH).
   */
  function productsPage<Item> (query: ProductListQueryType, present: (row: ProductRow) => Item): Page<Item> | Promise<Page<Item>> {
    const listing = productListing(query)
    return sortedPage(query, listing.fingerprint, PRODUCT_ORDERS[listing.sort], (rows, position) => listProductsSoon(db, dialect, listing, rows, position), present)
  }

  app.post('/products', {
    onRequest: authenticate,
    schema: {
      tags: ['products'],
      operationId: 'createProduct',
      summary: 'Create a product (admin)',
      description: 'Admins only. `stock` defaults to 0 and `onSale` to true; `id`, `createdAt` and `updatedAt` are accepted and ignored.',
      security: requires('products:write'),
      body: ref(ProductCreateBody),
      response: { 201: success(Product, { description: 'The new product.', headers: { ...LOCATION_HEADER, ...ETAG_HEADER } }), ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'ACCESS_DENIED') }
    }
  }, async (request, reply) => {
    requireAdmin(request)
    const { name, price, category, stock = 0, onSale = true } = request.body
    const product = await write(db, async (trx) => {
      const created = representation(await insertProduct(trx, { name, price, category, stock, onSale, now: nowIso() }))
      await recordEvent(trx, { type: 'product.created', resourceId: created.id, data: created, actor: actorOf(request) })
      return created
    })
    return await sendWithTag(reply.code(201).header('location', `/v1/products/${product.id}`), Product, product)
  })

  app.get('/products', {
    config: { queryRules: productQueryRules },
    schema: {
      tags: ['products'],
      operationId: 'listProducts',
      summary: 'List products: filter, search and sort',
      description: 'Filters combine with AND: `category` (repeat for several), `onSale`, `inStock`, `minPrice` and `maxPrice` (inclusive), ' +
        'and `q`, a search of the name in the database\'s full-text index (words, `prefix*`, `"a phrase"`). ' +
        '`sort` is `-createdAt` (newest first, the default), `createdAt`, `price`, `-price` or `name`; with `q` and no `sort`, the best matches come first. Keyset paging: `limit` 1 to 100 (default 20); ' +
        'when more follow, `Link: <…>; rel="next"` gives the next page, whose cursor is valid only with the same sort and filters (else 400 CURSOR_MISMATCH). ' +
        'Any other query parameter, or a single-valued one given twice, is a 400 naming it.',
      security: [],
      querystring: ProductListQuery,
      response: {
        200: success(ProductList, { description: 'A page of products.', headers: LINK_HEADER, example: Product.examples }),
        ...errorResponses('VALIDATION_ERROR', 'CURSOR_MISMATCH')
      }
    }
  }, async (request, reply) => answerPage(request, reply, await productsPage(request.query, representation)))
  // The pages asked for with `limit` and `cursor` only, answered before Fastify's request path (pipeline/fast-reads.ts).
  app.fastReads.addList({ route: `${app.prefix}/products`, page: (query) => productsPage(query, (row) => toProductJson(row, base)) })

  app.get('/products/:id', {
    schema: {
      tags: ['products'],
      operationId: 'getProduct',
      summary: 'Read a product',
      description: 'Sends a strong ETag; with a current If-None-Match the answer is 304.',
      security: [],
      params: IdParams,
      headers: IfNoneMatchHeaders,
      response: { 200: success(Product, { description: 'The product.', headers: ETAG_HEADER }), 304: NotModified, ...errorResponses('VALIDATION_ERROR', 'PRODUCT_NOT_FOUND') }
    }
  }, async (request, reply) => {
    const row = await findProductById(db, BigInt(request.params.id))
    if (row === undefined) throw new ApiError('PRODUCT_NOT_FOUND')
    return await sendTagged(request, reply, Product, representation(row))
  })
  // The same read, answered before Fastify's request path when nothing else is asked (pipeline/fast-reads.ts).
  app.fastReads.addRead({
    route: `${app.prefix}/products/:id`,
    find: (id) => findProductSoon(db, id),
    present: (row) => toProductJson(row, base)
  })

  app.patch('/products/:id', {
    onRequest: authenticate,
    schema: {
      tags: ['products'],
      operationId: 'updateProduct',
      summary: 'Change some members of a product (admin)',
      description: `Admins only. Send some of ${WRITABLE_MEMBERS.join(', ')} (at least one); each is checked by the same rule as on create. ` +
        '`null` is not accepted for any member. Accepts application/json and application/merge-patch+json.',
      security: requires('products:write'),
      params: IdParams,
      headers: IfMatchHeaders,
      consumes: ['application/json', 'application/merge-patch+json'],
      body: ref(ProductPatchBody),
      response: { 200: success(Product, { description: 'The changed product.', headers: ETAG_HEADER }), ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS, 'PRODUCT_NOT_FOUND', 'ACCESS_DENIED', 'PRECONDITION_FAILED') }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    const { name, price, category, stock, onSale } = request.body
    return await guardedWrite(request, reply, {
      lock: async (executor) => await lockProduct(executor, dialect, id),
      notFound: 'PRODUCT_NOT_FOUND',
      authorize: () => { requireAdmin(request) },
      representation: { schema: Product, of: representation },
      write: async (trx) => {
        const product = await updateProduct(trx, id, { name, price, category, stock, onSale }, nowIso())
        await recordEvent(trx, { type: 'product.updated', resourceId: id, data: representation(product), actor: actorOf(request) })
        return product
      }
    })
  })
}

export const productRoutes = fp(routes, { name: 'products', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
