import createClient, { type Middleware } from 'openapi-fetch'
import type { paths } from '../../client/schema.js'

// The console works only through the public API, typed by the generated client. The session's
// token lives in sessionStorage (this tab only, gone with it), never localStorage or a cookie.

const TOKEN = 'console.token'

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN),
  keep: (token: string): void => { sessionStorage.setItem(TOKEN, token) },
  forget: (): void => { sessionStorage.removeItem(TOKEN) }
}

const bearer: Middleware = {
  onRequest ({ request }) {
    const token = session.token()
    if (token !== null) request.headers.set('authorization', `Bearer ${token}`)
    return request
  }
}

export const api = createClient<paths>({ baseUrl: location.origin })
api.use(bearer)

/** An error answer of the API, as its catalogue words it. */
export interface Problem {
  status: number
  code: string
  message: string
  errors?: Array<{ field: string, message: string }>
}

/** The problem of an answer that failed (the API's error body; a network failure said in words). */
export function problemOf (error: unknown, response: Response | undefined): Problem {
  const body = error as Partial<Problem> | undefined
  if (body !== undefined && typeof body === 'object' && typeof body.code === 'string') {
    return { status: response?.status ?? 0, code: body.code, message: body.message ?? body.code, errors: body.errors }
  }
  return { status: response?.status ?? 0, code: 'NETWORK', message: 'The service could not be reached. Check the connection and try again.' }
}

/** The `cursor` of a list answer's next page (its Link header), or undefined on the last page. */
export function nextCursor (response: Response): string | undefined {
  const link = response.headers.get('link')
  const match = link === null ? null : /<([^>]+)>;\s*rel="next"/.exec(link)
  if (match === null) return undefined
  return new URL(match[1]!, location.origin).searchParams.get('cursor') ?? undefined
}
