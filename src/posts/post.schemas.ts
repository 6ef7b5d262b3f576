import { Type } from '@sinclair/typebox'
import { Id, named, ref, ReadOnly, Text, Timestamp } from '../http/schemas.js'
import { Image, MAX_POST_IMAGES } from '../files/image.schemas.js'

// Field rules (docs/api.md): lengths are Unicode code points; "non-blank" and
// well-formedness come from Text(). The rules set no limit on content; this service caps it
// so that one post cannot grow without bound (the request body limit applies as well).
export const TITLE_MAX = 100
export const CONTENT_MAX = 100_000

export const Title = Text({ maxLength: TITLE_MAX, description: `Non-blank; at most ${TITLE_MAX} characters (Unicode code points).`, examples: ['Hello, world'] })
// Digits grouped by hand: toLocaleString would page in ICU's locale data (about 7 MiB resident).
export const Content = Text({ maxLength: CONTENT_MAX, description: `Non-blank; at most ${String(CONTENT_MAX).replace(/\B(?=(\d{3})+$)/g, ',')} characters (Unicode code points).`, examples: ['My first post.'] })

/** A view count: read from the database as a 64-bit integer (a BigInt), written as a JSON number. */
export const ViewCount = Type.Unsafe<bigint>({ type: 'integer', format: 'int64', minimum: 0, description: 'Views counted through POST /v1/posts/{id}/views.', examples: [0] })

export const Author = named('Author', Type.Object({ id: Id, name: Type.String() }, { description: 'The user who wrote the post.' }))

const postExample = {
  id: 7,
  title: 'Hello, world',
  content: 'My first post.',
  author: { id: 42, name: 'Ada' },
  views: 0,
  createdAt: '2026-11-21T16:30:00.000Z',
  updatedAt: '2026-11-21T16:30:00.000Z',
  images: []
}

export const Post = named('Post', Type.Object({
  id: Id,
  title: Type.String(),
  content: Type.String(),
  author: ref(Author),
  views: ViewCount,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  images: Type.Array(ref(Image), { maxItems: MAX_POST_IMAGES, description: `Oldest first; at most ${MAX_POST_IMAGES} (POST /v1/posts/{id}/images).` })
}, { description: 'A post.', examples: [postExample] }))

export const PostList = Type.Array(ref(Post), { maxItems: 100, description: 'Posts in the order asked for: at most `limit` (1 to 100).', examples: [[postExample]] })

export const PostViews = named('PostViews', Type.Object({ views: ViewCount }, { description: 'The post\'s view count after this view.', examples: [{ views: 1 }] }))

// The members of the representation a client may send back (so that it can PUT what it read);
// they are accepted and ignored, never applied.
const readOnlyMembers = {
  id: ReadOnly('The post id.'),
  images: ReadOnly('The post\'s images (changed only through its images\' own operations).'),
  author: ReadOnly('The author; always the caller on create, never changed.'),
  views: ReadOnly('The view count.'),
  createdAt: ReadOnly('Creation time.'),
  updatedAt: ReadOnly('Time of the last change.')
}

export const PostCreateBody = named('PostCreateRequest', Type.Object({ title: Title, content: Content, ...readOnlyMembers }, {
  additionalProperties: false,
  description: 'A new post; the author is the caller.',
  examples: [{ title: 'Hello, world', content: 'My first post.' }]
}))

export const PostReplaceBody = named('PostReplaceRequest', Type.Object({ title: Title, content: Content, ...readOnlyMembers }, {
  additionalProperties: false,
  description: 'The new title and content (both required).',
  examples: [{ title: 'Hello again', content: 'My first post, edited.' }]
}))

// PATCH (JSON or JSON merge patch): only the members sent change, each by the same rule as in
// PUT; `null` is not a string, so it fails (a title or content cannot be removed), and a body
// with no writable member is refused as a whole (field `body`): standard `anyOf` of `required`,
// which validation.ts reports as one failure of the body.
export const PostPatchBody = named('PostPatchRequest', Type.Object({
  title: Type.Optional(Title),
  content: Type.Optional(Content),
  ...readOnlyMembers
}, {
  additionalProperties: false,
  anyOf: [{ required: ['title'] }, { required: ['content'] }],
  description: 'Some of title and content: at least one.',
  examples: [{ title: 'A better title' }]
}))
