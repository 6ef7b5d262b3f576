import type { FastifyPluginAsync } from 'fastify'
import { actorOf } from '../events/actor.js'
import fp from 'fastify-plugin'
import { currentUser } from '../auth/authentication.js'
import { recordEvent } from '../events/event.repository.js'
import { storedImage } from '../files/file.repository.js'
import { registerImageRoutes } from '../files/image-routes.js'
import { MAX_POST_IMAGES } from '../files/image.schemas.js'
import { ApiError } from '../http/errors.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import { findPostForUpdate, setPostImages } from './post.repository.js'
import { toPost } from './post.representation.js'
import type { PostWithAuthor } from './post.table.js'

// A post's images: POST /v1/posts/{id}/images, DELETE /v1/posts/{id}/images/{imageId}.
const routes: FastifyPluginAsync = async (app) => {
  const { dialect } = app
  const base = app.config.publicUrl
  await registerImageRoutes<PostWithAuthor>(app, {
    path: '/posts/:id/images',
    collection: true,
    tag: 'posts',
    operations: { add: 'addPostImage', remove: 'removePostImage' },
    noun: 'post',
    scope: 'posts:write',
    who: `The post's author only; a post holds at most ${MAX_POST_IMAGES} images`,
    errors: ['POST_NOT_FOUND', 'FORBIDDEN_POST_ACCESS'],
    spec: (request, id) => ({
      owner: { kind: 'post', id },
      max: MAX_POST_IMAGES,
      lock: async (executor) => await findPostForUpdate(executor, dialect, id),
      notFound: new ApiError('POST_NOT_FOUND'),
      authorize: (post) => { if (currentUser(request).id !== post.author_id) throw new ApiError('FORBIDDEN_POST_ACCESS') },
      save: async (trx, post, images, now) => {
        const json = JSON.stringify(images.map(storedImage))
        await setPostImages(trx, id, json, now)
        await recordEvent(trx, { type: 'post.updated', resourceId: id, data: toPost({ ...post, images: json, updated_at: now }, base), actor: actorOf(request) })
      }
    })
  })
}

export const postImageRoutes = fp(routes, { name: 'post-images', dependencies: [...FEATURE_PREREQUISITES, 'files'], encapsulate: true })
