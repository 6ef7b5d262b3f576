import assert from 'node:assert/strict'
import { json } from './load.js'

// The few API calls the system tests share, over real HTTP against a base URL.

/** The parsed body, once the status is the expected one (else the body is the message). */
export async function body (res: Response, status: number): Promise<unknown> {
  const text = await res.text()
  assert.equal(res.status, status, text)
  return JSON.parse(text)
}

export async function signUpAndLogIn (base: string, email: string, password = 'system password'): Promise<{ id: number, auth: Record<string, string> }> {
  const created = await fetch(`${base}/v1/users`, json({ email, password, name: 'System' }))
  const id = (await body(created, 201) as { id: number }).id
  return { id, auth: await logIn(base, email, password) }
}

export async function logIn (base: string, email: string, password: string): Promise<Record<string, string>> {
  const res = await fetch(`${base}/v1/sessions`, json({ email, password }))
  return { authorization: `Bearer ${(await body(res, 201) as { token: string }).token}` }
}

export async function createProduct (base: string, admin: Record<string, string>, stock: number): Promise<number> {
  const res = await fetch(`${base}/v1/products`, json({ name: 'Widget', price: 100, category: 'HOME', stock }, admin))
  return (await body(res, 201) as { id: number }).id
}

export async function productStock (base: string, productId: number): Promise<number> {
  const res = await fetch(`${base}/v1/products/${productId}`)
  return (await body(res, 200) as { stock: number }).stock
}

export interface OrderRow { id: number, quantity: number, status: string, productId: number }

/** Every order of a user, following the Link pages. */
export async function allOrders (base: string, userId: number, auth: Record<string, string>): Promise<OrderRow[]> {
  const orders: OrderRow[] = []
  let next: string | undefined = `/v1/users/${userId}/orders?limit=100`
  while (next !== undefined) {
    const res: Response = await fetch(`${base}${next}`, { headers: auth })
    assert.equal(res.status, 200)
    orders.push(...((await res.json()) as OrderRow[]))
    next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1]
  }
  return orders
}

export interface FeedEvent { id: string, sequence: number, type: string, resource: { type: string, id: number, version: number } }

/** The whole event feed the caller may read, oldest first, page by page. */
export async function allEvents (base: string, auth: Record<string, string>): Promise<FeedEvent[]> {
  const events: FeedEvent[] = []
  for (;;) {
    const after = events.at(-1)?.sequence
    const res = await fetch(`${base}/v1/events?limit=100${after === undefined ? '' : `&after=${after}`}`, { headers: auth })
    const page = await body(res, 200) as FeedEvent[]
    events.push(...page)
    if (page.length < 100) return events
  }
}

/** Every post of an author, following the Link pages. */
export async function allPostIds (base: string, authorId: number): Promise<number[]> {
  const ids: number[] = []
  let next: string | undefined = `/v1/posts?limit=100&authorId=${authorId}`
  while (next !== undefined) {
    const res: Response = await fetch(`${base}${next}`)
    assert.equal(res.status, 200)
    ids.push(...((await res.json()) as Array<{ id: number }>).map((post) => post.id))
    next = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1]
  }
  return ids
}
