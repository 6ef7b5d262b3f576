import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { actorOf } from '../events/actor.js'
import fp from 'fastify-plugin'
import { requires } from '../auth/scopes.js'
import { FEATURE_PREREQUISITES } from '../http/plugins.js'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Executor } from '../db/schema.js'
import { nowIso } from '../db/types.js'
import { authenticate, currentUser } from '../auth/authentication.js'
import { ApiError } from '../http/errors.js'
import { sendTagged, sendWithTag } from '../http/etag.js'
import { guardedWrite } from '../http/guarded-write.js'
import { recordEvent } from '../events/event.repository.js'
import { writeWithEvents } from '../events/recorded-write.js'
import { answerPage, type Page } from '../http/paging.js'
import { sortedPage } from '../http/sorted-paging.js'
import { POST_ORDERS, PostListQuery, postListing, postQueryRules, type PostListQueryType } from './post.listing.js'
import { AUTH_ERRORS, BODY_ERRORS, errorResponses, ETAG_HEADER, IdParams, IfMatchHeaders, IfNoneMatchHeaders, LINK_HEADER, LOCATION_HEADER, NoContent, NotModified, ref, success } from '../http/schemas.js'
import { countView, deletePost, findPost, findPostForUpdate, findPostSoon, insertPost, listPostsSoon, updatePost } from './post.repository.js'
import type { PostWithAuthor } from './post.table.js'
import { toPost, toPostJson } from './post.representation.js'
import { Post, PostCreateBody, PostList, PostPatchBody, PostReplaceBody, PostViews } from './post.schemas.js'

const tags = ['posts']
const WRITE_ERRORS = [...AUTH_ERRORS, 'VALIDATION_ERROR', 'POST_NOT_FOUND', 'FORBIDDEN_POST_ACCESS', 'PRECONDITION_FAILED'] as const

/** Only the author may change a post; anyone else, admins included, gets the same generic 403. */
function requireAuthor (request: FastifyRequest, post: PostWithAuthor): void {
  if (currentUser(request).id !== post.author_id) throw new ApiError('FORBIDDEN_POST_ACCESS')
}

const routes: FastifyPluginAsyncTypebox = async (app) => {
  const { db, dialect } = app
  const base = app.config.publicUrl
  const representation = (row: PostWithAuthor): ReturnType<typeof toPost> => toPost(row, base)

  /**
   * The page of the list a valid query asks for, each row `present`ed, at once where the database
   * answers at once (post.repository.ts listPostsSoon), else its promise; a cursor of another
   * list is refused here (400 CURSOR_MISMATCH).
   */
  function postsPage<Item> (query: PostListQueryType, present: (row: PostWithAuthor) => Item): Page<Item> | Promise<Page<Item>> {
    const listing = postListing(query)
    return sortedPage(query, listing.fingerprint, POST_ORDERS[listing.sort], (rows, position) => listPostsSoon(db, dialect, listing, rows, position), present)
  }

  /** PUT, PATCH and DELETE of a post: the row locked, 404, then the author only, then If-Match. */
  const guardOf = (request: FastifyRequest, id: bigint) => ({
    lock: async (executor: Executor) => await findPostForUpdate(executor, dialect, id),
    notFound: 'POST_NOT_FOUND' as const,
    authorize: (post: PostWithAuthor) => { requireAuthor(request, post) },
    representation: { schema: Post, of: representation }
  })

  /** PUT and PATCH: writes the members sent and answers the new representation with its tag. */
  async function change (request: FastifyRequest, reply: FastifyReply, id: bigint, changes: { title?: string, content?: string }): Promise<FastifyReply> {
    return await guardedWrite(request, reply, {
      ...guardOf(request, id),
      write: async (trx, current) => {
        const now = nowIso()
        // Under the row's lock nothing else changes it: the post after the update is known before it.
        const updated: PostWithAuthor = { ...current, title: changes.title ?? current.title, content: changes.content ?? current.content, updated_at: now }
        const row = await writeWithEvents(trx, updatePost(trx, id, { ...changes, now }), { type: 'post.updated', data: (id) => representation({ ...updated, id }), actor: actorOf(request) })
        return { ...row, author_name: current.author_name }
      }
    })
  }

  app.get('/posts', {
    config: { queryRules: postQueryRules },
    schema: {
      tags,
      operationId: 'listPosts',
      summary: 'List posts: filter, search and sort',
      description: 'Filters combine with AND: `authorId`, `createdAfter` and `createdBefore` (RFC 3339, both excluded), ' +
        'and `q`, a search of title and content in the database\'s full-text index (words, `prefix*`, `"a phrase"`). ' +
        '`sort` is `-createdAt` (newest first, the default), `createdAt` or `-views`; with `q` and no `sort`, the best matches come first. Keyset paging: `limit` 1 to 100 (default 20); ' +
        'when more follow, `Link: <…>; rel="next"` gives the next page, whose cursor is valid only with the same sort and filters (else 400 CURSOR_MISMATCH). ' +
        'Any other query parameter, or a single-valued one given twice, is a 400 naming it.',
      security: [],
      querystring: PostListQuery,
      response: {
        200: success(PostList, { description: 'A page of posts.', headers: LINK_HEADER }),
        ...errorResponses('VALIDATION_ERROR', 'CURSOR_MISMATCH')
      }
    }
  }, async (request, reply) => answerPage(request, reply, await postsPage(request.query, representation)))
  // The pages asked for with `limit` and `cursor` only, answered before Fastify's request path (pipeline/fast-reads.ts).
  app.fastReads.addList({ route: `${app.prefix}/posts`, page: (query) => postsPage(query, (row) => toPostJson(row, base)) })

  app.get('/posts/:id', {
    schema: {
      tags,
      operationId: 'getPost',
      summary: 'Read a post',
      description: 'Sends a strong ETag; with a current If-None-Match the answer is 304. Reading never counts a view.',
      security: [],
      params: IdParams,
      headers: IfNoneMatchHeaders,
      response: {
        200: success(Post, { description: 'The post.', headers: ETAG_HEADER }),
        304: NotModified,
        ...errorResponses('VALIDATION_ERROR', 'POST_NOT_FOUND')
      }
    }
  }, async (request, reply) => {
    const post = await findPost(db, BigInt(request.params.id))
    if (post === undefined) throw new ApiError('POST_NOT_FOUND')
    return await sendTagged(request, reply, Post, representation(post))
  })
  // The same read, answered before Fastify's request path when nothing else is asked (pipeline/fast-reads.ts).
  app.fastReads.addRead({
    route: `${app.prefix}/posts/:id`,
    find: (id) => findPostSoon(db, id),
    present: (row) => toPostJson(row, base)
  })

  app.post('/posts', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'createPost',
      summary: 'Create a post',
      description: 'The author is the caller. Read-only members (id, author, views, createdAt, updatedAt) are accepted and ignored.',
      security: requires('posts:write'),
      body: ref(PostCreateBody),
      response: {
        201: success(Post, { description: 'The new post.', headers: { ...LOCATION_HEADER, ...ETAG_HEADER } }),
        ...errorResponses(...AUTH_ERRORS, ...BODY_ERRORS)
      }
    }
  }, async (request, reply) => {
    const user = currentUser(request)
    const { title, content } = request.body
    const now = nowIso()
    // The name is the caller's as the session saw it a moment ago; a rename in between shows on the next read.
    const post = (id: bigint): PostWithAuthor => ({ id, author_id: user.id, title, content, views: 0n, created_at: now, updated_at: now, images: '[]', author_name: user.name })
    const row = await writeWithEvents(db, insertPost(db, { authorId: user.id, title, content, now }), { type: 'post.created', data: (id) => representation(post(id)), actor: actorOf(request) })
    const created = representation({ ...row, author_name: user.name })
    return await sendWithTag(reply.code(201).header('location', `/v1/posts/${created.id}`), Post, created)
  })

  app.put('/posts/:id', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'replacePost',
      summary: 'Replace a post\'s title and content',
      description: 'Author only. Both title and content are required; read-only members of the representation are accepted and ignored, so a client can PUT back what it read. Honours If-Match.',
      security: requires('posts:write'),
      params: IdParams,
      headers: IfMatchHeaders,
      body: ref(PostReplaceBody),
      response: { 200: success(Post, { description: 'The changed post.', headers: ETAG_HEADER }), ...errorResponses(...WRITE_ERRORS, ...BODY_ERRORS) }
    }
  }, async (request, reply) => {
    const { title, content } = request.body
    return await change(request, reply, BigInt(request.params.id), { title, content })
  })

  app.patch('/posts/:id', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'updatePost',
      summary: 'Change some of a post\'s title and content',
      description: 'Author only. `application/json` or `application/merge-patch+json`. Only the members sent change, each by the same rule as in PUT; `null` for a member, or a body with neither title nor content, is 400. Honours If-Match.',
      security: requires('posts:write'),
      params: IdParams,
      headers: IfMatchHeaders,
      consumes: ['application/json', 'application/merge-patch+json'],
      body: ref(PostPatchBody),
      response: { 200: success(Post, { description: 'The changed post.', headers: ETAG_HEADER }), ...errorResponses(...WRITE_ERRORS, ...BODY_ERRORS) }
    }
  }, async (request, reply) => {
    const { title, content } = request.body
    return await change(request, reply, BigInt(request.params.id), { title, content })
  })

  app.delete('/posts/:id', {
    onRequest: authenticate,
    schema: {
      tags,
      operationId: 'deletePost',
      summary: 'Delete a post',
      description: 'Author only. Honours If-Match.',
      security: requires('posts:write'),
      params: IdParams,
      headers: IfMatchHeaders,
      response: { 204: NoContent, ...errorResponses(...WRITE_ERRORS) }
    }
  }, async (request, reply) => {
    const id = BigInt(request.params.id)
    return await guardedWrite(request, reply, {
      ...guardOf(request, id),
      write: async (trx) => {
        await deletePost(trx, id)
        await recordEvent(trx, { type: 'post.deleted', resourceId: id, actor: actorOf(request) })
      }
    })
  })

  app.post('/posts/:id/views', {
    schema: {
      tags,
      operationId: 'countPostView',
      summary: 'Count one view of a post',
      description: 'No log-in and no body. Adds exactly one view atomically (concurrent calls are all counted) and answers the new count. Reading a post with GET never counts a view.',
      security: [],
      params: IdParams,
      response: { 200: success(PostViews, { description: 'The new view count.' }), ...errorResponses('VALIDATION_ERROR', 'POST_NOT_FOUND', 'MALFORMED_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE') }
    }
  }, async (request) => {
    const views = await countView(db, BigInt(request.params.id))
    if (views === undefined) throw new ApiError('POST_NOT_FOUND')
    return { views }
  })
}

export const postRoutes = fp(routes, { name: 'posts', dependencies: [...FEATURE_PREREQUISITES], encapsulate: true })
