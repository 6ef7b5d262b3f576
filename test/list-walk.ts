import assert from 'node:assert/strict'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'

// Walking a list the way a client does: the first page, then each `Link: <…>; rel="next"` until
// there is none. Shared by the list tests (not a test file itself).

/** The next page's URL from a response, or undefined on the last page. */
export function nextPage (res: LightMyRequestResponse): string | undefined {
  const link = res.headers.link
  if (link === undefined) return undefined
  const match = /^<([^>]+)>; rel="next"$/.exec(String(link))
  assert.ok(match, `Link header: ${String(link)}`)
  return match[1]
}

/**
 * Every item of every page from `url` on, asserting each page is a 200. `between` runs after each
 * page (given its number, from 0), for changes made while a client walks.
 */
export async function walkPages<T> (app: FastifyInstance, url: string, headers: Record<string, string> = {}, between?: (page: number) => Promise<void>): Promise<T[]> {
  const items: T[] = []
  let next: string | undefined = url
  for (let page = 0; next !== undefined; page++) {
    assert.ok(page <= 200, 'the walk ends')
    const res: LightMyRequestResponse = await app.inject({ method: 'GET', url: next, headers })
    assert.equal(res.statusCode, 200, `${next}: ${res.body}`)
    items.push(...res.json() as T[])
    next = nextPage(res)
    if (between !== undefined) await between(page)
  }
  return items
}
