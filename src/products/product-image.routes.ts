import type { FastifyPluginAsync } from 'fastify'
import { actorOf } from '../events/actor.js'
import fp from 'fastify-plugin'
import { requireAdmin } from '../auth/authentication.js'
import { recordEvent } from '../events/event.repository.js'
import { storedImage } from '../files/file.repository.js'
import { registerImageRoutes } from '../files/image-routes.js'
import { MAX_PRODUCT_IMAGES } from '../files/image.schemas.js'
import { ApiError } from '../http/errors.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { lockProduct, setProductImages } from './product.repository.js'
import { toProduct } from './product.representation.js'
import type { ProductRow } from './product.table.js'

// A product's images: POST /v1/products/{id}/images, DELETE /v1/products/{id}/images/{imageId}.
const routes: FastifyPluginAsync = async (app) => {
  const { dialect } = app
  const base = app.config.publicUrl
  await registerImageRoutes<ProductRow>(app, {
    path: '/products/:id/images',
    collection: true,
    tag: 'products',
    operations: { add: 'addProductImage', remove: 'removeProductImage' },
    noun: 'product',
    scope: 'products:write',
    who: `Admins only; a product holds at most ${MAX_PRODUCT_IMAGES} images`,
    errors: ['PRODUCT_NOT_FOUND', 'ACCESS_DENIED'],
    spec: (request, id) => ({
      owner: { kind: 'product', id },
      max: MAX_PRODUCT_IMAGES,
      lock: async (executor) => await lockProduct(executor, dialect, id),
      notFound: new ApiError('PRODUCT_NOT_FOUND'),
      authorize: () => { requireAdmin(request) },
      save: async (trx, _row, images, now) => {
        const product = await setProductImages(trx, id, JSON.stringify(images.map(storedImage)), now)
        await recordEvent(trx, { type: 'product.updated', resourceId: id, data: toProduct(product, base), actor: actorOf(request) })
      }
    })
  })
}

export const productImageRoutes = fp(routes, { name: 'product-images', dependencies: [...FEATURE_PREREQUISITES, 'files'], encapsulate: true })
