import { Type } from '@sinclair/typebox'
import { PageQuery } from '../http/paging.js'
import { Id, IdString, LINK_HEADER, ReadOnly, Text, Timestamp } from '../http/schemas.js'

// Field rules (contract section 8): lengths are Unicode code points; "non-blank" and
// well-formedness come from Text(). Content has no limit in the contract; this service caps it
// so that one post cannot grow without bound (the request body limit applies as well).
export const TITLE_MAX = 100
export const CONTENT_MAX = 100_000

export const Title = Text({ maxLength: TITLE_MAX, description: `Non-blank; at most ${TITLE_MAX} characters (Unicode code points).`, examples: ['Hello, world'] })
export const Content = Text({ maxLength: CONTENT_MAX, description: `Non-blank; at most ${CONTENT_MAX.toLocaleString('en')} characters (Unicode code points).`, examples: ['My first post.'] })

/** A view count: read from the database as a 64-bit integer (a BigInt), written as a JSON number. */
export const ViewCount = Type.Unsafe<bigint>({ type: 'integer', format: 'int64', minimum: 0, description: 'Views counted through POST /v1/posts/{id}/views.', examples: [0] })

export const Author = Type.Object({ id: Id, name: Type.String() }, { description: 'The user who wrote the post.' })

export const Post = Type.Object({
  id: Id,
  title: Type.String(),
  content: Type.String(),
  author: Author,
  views: ViewCount,
  createdAt: Timestamp,
  updatedAt: Timestamp
}, { description: 'A post.' })

export const PostList = Type.Array(Post, { description: 'Posts, newest first. When more follow, the Link header carries rel="next".', headers: LINK_HEADER })

export const PostViews = Type.Object({ views: ViewCount }, { description: 'The post\'s view count after this view.' })

// The members of the representation a client may send back (so that it can PUT what it read);
// they are accepted and ignored, never applied.
const readOnlyMembers = {
  id: ReadOnly('The post id.'),
  author: ReadOnly('The author; always the caller on create, never changed.'),
  views: ReadOnly('The view count.'),
  createdAt: ReadOnly('Creation time.'),
  updatedAt: ReadOnly('Time of the last change.')
}

export const PostCreateBody = Type.Object({ title: Title, content: Content, ...readOnlyMembers }, { additionalProperties: false })

export const PostReplaceBody = Type.Object({ title: Title, content: Content, ...readOnlyMembers }, { additionalProperties: false })

// PATCH (JSON or JSON merge patch): only the members sent change, each by the same rule as in
// PUT; `null` is not a string, so it fails (a title or content cannot be removed), and a body
// with no writable member is refused as a whole (field `body`).
export const PostPatchBody = Type.Object({
  title: Type.Optional(Title),
  content: Type.Optional(Content),
  ...readOnlyMembers
}, { additionalProperties: false, 'x-require-one-of': ['title', 'content'], description: 'At least one of title and content.' })

export const PostListQuery = Type.Object({
  ...PageQuery,
  authorId: Type.Optional(IdString('Only posts by this user (an id). An unknown user has no posts: the list is empty.'))
})
