import { Type } from '@sinclair/typebox'
import { HAS_WORD } from '../http/schemas.js'

export const MAX_SEARCH_LENGTH = 200

/** The `q` parameter of a list, read by searchTerms(); `where` says what is searched ("the name"). */
export function SearchParameter (where: string, example: { words: string, prefix: string, phrase: string, stem: string }) {
  return Type.String({
    minLength: 1,
    maxLength: MAX_SEARCH_LENGTH,
    pattern: HAS_WORD,
    'x-well-formed': true,
    description: `Words in ${where}, all of them: \`${example.words}\`; a prefix ends in \`*\` (\`${example.prefix}*\`); a quoted phrase matches words in that order (\`"${example.phrase}"\`). ` +
      `Words are matched by their stem (${example.stem}) and case does not matter; other characters only separate words. ` +
      `At most ${MAX_SEARCH_LENGTH} characters with at least one letter or digit. Without \`sort\`, the best matches come first.`,
    examples: [example.words.split(' ')[0]!]
  })
}
