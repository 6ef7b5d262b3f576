import { sql, type RawBuilder } from 'kysely'

// What a client's search text `q` asks for, read by the service itself, never handed to a
// database's query syntax: words (runs of letters and digits), prefixes (a word ending in `*`)
// and quoted phrases ("paper notebook"). Everything else (punctuation, operators such as OR, NOT,
// `-`, `:`, parentheses) only separates words. All terms must match (AND). From the terms each
// database's query is then built with every word quoted or bound as a parameter, so no text of
// the client's is ever read as syntax by FTS5 or by PostgreSQL's tsquery parser.

export interface SearchTerms {
  words: string[]
  prefixes: string[]
  /** Phrases of two words or more (a quoted single word is a word). */
  phrases: string[][]
}

// Letters and digits, as SQLite's unicode61 tokenizer reads a token (its default categories
// L* and N*); PostgreSQL's parser agrees on plain text.
const WORD = /([\p{L}\p{N}]+)(\*?)/gu

/** The terms of `q`, or undefined when it has no word at all (`*`, `""`, `- OR (`). */
export function searchTerms (q: string): SearchTerms | undefined {
  const terms: SearchTerms = { words: [], prefixes: [], phrases: [] }
  // Quotes alternate outside / inside; an unclosed quote runs to the end.
  q.split('"').forEach((part, index) => {
    if (index % 2 === 1) {
      const phrase = [...part.matchAll(WORD)].map((m) => m[1]!)
      if (phrase.length === 1) terms.words.push(phrase[0]!)
      else if (phrase.length > 1) terms.phrases.push(phrase)
      return
    }
    for (const match of part.matchAll(WORD)) {
      if (match[2] === '*') terms.prefixes.push(match[1]!)
      else terms.words.push(match[1]!)
    }
  })
  return terms.words.length + terms.prefixes.length + terms.phrases.length === 0 ? undefined : terms
}

/**
 * An FTS5 query of the terms: each word and phrase a quoted string, each prefix a quoted string
 * then `*`. Terms hold letters and digits only, so no quote needs doubling; FTS5 reads nothing in
 * them as an operator (a quoted "OR" is the word).
 */
export function fts5Query (terms: SearchTerms): string {
  return [
    ...terms.words.map((w) => `"${w}"`),
    ...terms.prefixes.map((p) => `"${p}" *`),
    ...terms.phrases.map((phrase) => `"${phrase.join(' ')}"`)
  ].join(' ')
}

/**
 * A PostgreSQL tsquery of the terms, each part built by a function that reads its text as plain
 * words (plainto_tsquery, phraseto_tsquery) or, for a prefix, a single word of letters and digits
 * followed by `:*`; every text is a bound parameter. The parts are joined with `&&` (AND).
 */
/**
 * The same tsquery as a scalar subquery, which PostgreSQL computes once per statement (an
 * InitPlan), for a rank computed per matching row: a function of a parameter in the select list
 * is otherwise computed again for every row (ranking 7,000 matching posts parsed the query 7,000
 * times). Not for the WHERE clause, where the planner needs the query's value to estimate how many
 * rows match (with the subquery it guessed, and walked an index for 25 ms instead of 1.4).
 */
export function tsQueryOnce (terms: SearchTerms, config = 'english'): RawBuilder<unknown> {
  return sql`(select ${tsQuery(terms, config)})`
}

export function tsQuery (terms: SearchTerms, config = 'english'): RawBuilder<unknown> {
  const parts: Array<RawBuilder<unknown>> = []
  const language = sql.lit(config)
  if (terms.words.length > 0) parts.push(sql`plainto_tsquery(${language}::regconfig, ${terms.words.join(' ')})`)
  for (const prefix of terms.prefixes) parts.push(sql`to_tsquery(${language}::regconfig, ${prefix + ':*'})`)
  for (const phrase of terms.phrases) parts.push(sql`phraseto_tsquery(${language}::regconfig, ${phrase.join(' ')})`)
  return sql`(${sql.join(parts, sql` && `)})`
}
