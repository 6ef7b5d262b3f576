import { sql, type Kysely, type Migration } from 'kysely'
import type { DialectName } from '../database.js'
import { dropFtsContentIndex, ftsContentIndex } from './columns.js'

// GET /v1/posts sorts by creation time (both directions) and by views, and searches title and
// content.
//
// Sorts: an index per sort, the key then the id, so a page at any depth is a range of one index;
// (author_id, created_at, id) replaces (author_id, id), which served ?authorId= in id order, and
// still serves the count of an author's posts. The views index is what a view count pays for the
// sort: on PostgreSQL an increment is no longer a HOT update (an indexed column changes), so it
// writes an entry in each of the table's indexes; SQLite rewrites the views index entry only.
//
// Search, kept in step by the database, in the writing statement's transaction, and never by a
// view count (the hot write of a post), which changes neither title nor content:
// - SQLite: an FTS5 index over title and content with the table as its content, the tokenizer
//   of the products' search, triggers for insert, delete and a change of title or content.
// - PostgreSQL: the english tsvector of title and content in a table of its own (post_search),
//   written by a trigger on insert and on a change of title or content, with a GIN index. Not a
//   stored generated column of posts, which PostgreSQL computes again on every update of the row,
//   so each view would parse up to 100,000 characters of content. The document is built from a
//   JSON array of the two, which leaves a gap between them: a quoted phrase does not match across
//   the end of the title and the start of the content, as it does not in FTS5's two columns.
//   The title's own tsvector is kept beside it, for relevance (does the title match?).
// Existing posts are indexed here.
export function postListing (dialect: DialectName): Migration {
  return {
    async up (db: Kysely<any>) {
      await sql`create index posts_created_at_id_idx on posts (created_at, id)`.execute(db)
      await sql`create index posts_author_id_created_at_id_idx on posts (author_id, created_at, id)`.execute(db)
      await sql`drop index posts_author_id_id_idx`.execute(db)
      await sql`create index posts_views_id_idx on posts (views, id)`.execute(db)
      if (dialect === 'postgres') {
        await sql`create table post_search (
          post_id bigint primary key references posts (id) on delete cascade,
          document tsvector not null,
          title_document tsvector not null
        )`.execute(db)
        await sql`create index post_search_document_idx on post_search using gin (document)`.execute(db)
        await sql`create function post_search_write() returns trigger language plpgsql as $$
          begin
            insert into post_search (post_id, document, title_document)
              values (new.id, to_tsvector('english'::regconfig, jsonb_build_array(new.title, new.content)), to_tsvector('english'::regconfig, new.title))
              on conflict (post_id) do update set document = excluded.document, title_document = excluded.title_document;
            return null;
          end
        $$`.execute(db)
        await sql`create trigger posts_search_write after insert or update of title, content on posts
          for each row execute function post_search_write()`.execute(db)
        await sql`insert into post_search (post_id, document, title_document)
          select id, to_tsvector('english'::regconfig, jsonb_build_array(title, content)), to_tsvector('english'::regconfig, title) from posts`.execute(db)
        return
      }
      await ftsContentIndex(db, 'posts', ['title', 'content'], 'porter unicode61 remove_diacritics 0')
    },
    async down (db: Kysely<any>) {
      if (dialect === 'postgres') {
        await sql`drop trigger posts_search_write on posts`.execute(db)
        await sql`drop function post_search_write()`.execute(db)
        await sql`drop table post_search`.execute(db)
      } else {
        await dropFtsContentIndex(db, 'posts')
      }
      await sql`drop index posts_views_id_idx`.execute(db)
      await sql`create index posts_author_id_id_idx on posts (author_id, id)`.execute(db)
      await sql`drop index posts_author_id_created_at_id_idx`.execute(db)
      await sql`drop index posts_created_at_id_idx`.execute(db)
    }
  }
}
