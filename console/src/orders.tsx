import { useEffect, useState } from 'preact/hooks'
import type { components } from '../../client/schema.js'
import { api, problemOf, type Problem } from './api.js'
import { date, orderStatus } from './format.js'
import { follow, type LiveState } from './live.js'
import { LiveStatus } from './live-status.js'
import { usePages } from './pages.js'
import { ProblemText } from './problem.js'

type Order = components['schemas']['Order']
type Status = Order['status']

function OrderLine ({ order }: { order: Order }) {
  return (
    <li>
      <a href={`#/orders/${order.id}`}>Order {order.id}</a>
      <span>{orderStatus(order.status)} · {order.quantity} × product {order.productId} · total {order.totalPrice}</span>
      <span>user {order.userId} · {date(order.createdAt)}</span>
    </li>
  )
}

/**
 * GET /v1/orders, newest first, a page at a time (keyset: the first page costs the same with ten
 * orders or ten million), filtered by status; each order placed while the screen is open is
 * put at the top as its `order.created` event arrives. The list is read once the stream is
 * open (and again whenever it reopens), so an order is either in the list or in the stream.
 */
export function OrdersScreen () {
  const [status, setStatus] = useState<Status | ''>('')
  const [live, setLive] = useState<LiveState>('connecting')
  const pages = usePages((wanted: Status | '', cursor) => api.GET('/v1/orders', {
    params: { query: { limit: 20, ...(wanted === '' ? {} : { status: [wanted] }), ...(cursor === undefined ? {} : { cursor }) } }
  }), '', (shown, page) => {
    // A first page read again keeps the live orders it does not hold yet.
    const known = new Set(page.map((order) => order.id))
    return [...shown.filter((order) => !known.has(order.id) && order.id > (page[0]?.id ?? 0)), ...page]
  })

  useEffect(() => follow(['order.created'], (event) => {
    if (event.type !== 'order.created') return
    const order = event.data
    if (pages.filter.current !== '' && pages.filter.current !== order.status) return
    pages.setItems((shown) => shown.some((known) => known.id === order.id) ? shown : [order, ...shown])
  }, (state) => {
    setLive(state)
    if (state === 'live') void pages.first(pages.filter.current)
  }), [])

  function choose (wanted: Status | ''): void {
    setStatus(wanted)
    pages.setItems(() => [])
    void pages.first(wanted)
  }
  const orders = pages.items

  return (
    <section aria-labelledby='orders-title'>
      <h1 id='orders-title'>Orders</h1>
      <form onSubmit={(event) => { event.preventDefault() }}>
        <label for='order-status'>Status</label>
        <select id='order-status' value={status} onChange={(event) => { choose((event.target as HTMLSelectElement).value as Status | '') }}>
          <option value=''>Every status</option>
          <option value='PAID'>Paid (to ship)</option>
          <option value='SHIPPED'>Shipped</option>
          <option value='CANCELED'>Canceled</option>
        </select>
      </form>
      <LiveStatus state={live} what='new orders appear here as they are placed' />
      <ProblemText problem={pages.problem} />
      {pages.loading && orders.length === 0 && <p aria-live='polite'>Loading…</p>}
      {!pages.loading && pages.problem === undefined && orders.length === 0 && <p>No orders.</p>}
      <ul class='cards' aria-label='Orders, newest first'>
        {orders.map((order) => <OrderLine key={order.id} order={order} />)}
      </ul>
      {pages.more && <button type='button' onClick={() => { void pages.next() }}>More orders</button>}
    </section>
  )
}

/** GET /v1/orders/{id}, and the two changes an operator makes: ship it, or cancel it (confirmed). */
export function OrderScreen ({ id }: { id: string }) {
  const [order, setOrder] = useState<Order | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  const [busy, setBusy] = useState(false)

  async function read (): Promise<void> {
    const { data, error, response } = await api.GET('/v1/orders/{id}', { params: { path: { id } } })
    if (data !== undefined) setOrder(data)
    else setProblem(problemOf(error, response))
  }
  useEffect(() => { void read().catch(() => { setProblem(problemOf(undefined, undefined)) }) }, [id])

  // No If-Match: the service itself only ships or cancels a PAID order, so a change made
  // meanwhile is refused as what it is (409, in the catalogue's words), then shown as it is now.
  async function change (status: 'SHIPPED' | 'CANCELED'): Promise<void> {
    if (status === 'CANCELED' && !confirm(`Cancel order ${id}? Its units go back to stock.`)) return
    setBusy(true)
    setProblem(undefined)
    setDone(undefined)
    const { data, error, response } = await api.PATCH('/v1/orders/{id}', { params: { path: { id } }, body: { status } })
      .catch(() => ({ data: undefined, error: undefined, response: undefined }))
    setBusy(false)
    if (data !== undefined) {
      setOrder(data)
      setDone(status === 'SHIPPED' ? 'The order is marked as shipped.' : 'The order is canceled.')
      return
    }
    setProblem(problemOf(error, response))
    await read().catch(() => undefined)
  }

  return (
    <section aria-labelledby='order-title'>
      <h1 id='order-title'>Order {id}</h1>
      {order === undefined && problem === undefined && <p aria-live='polite'>Loading…</p>}
      {order !== undefined && (
        <>
          <dl class='facts'>
            <dt>Status</dt><dd>{orderStatus(order.status)}</dd>
            <dt>Product</dt><dd><a href={`#/products/${order.productId}`}>product {order.productId}</a></dd>
            <dt>Quantity</dt><dd>{order.quantity}</dd>
            <dt>Total</dt><dd>{order.totalPrice}</dd>
            <dt>User</dt><dd>{order.userId}</dd>
            <dt>Placed</dt><dd>{date(order.createdAt)}</dd>
            <dt>Changed</dt><dd>{date(order.updatedAt)}</dd>
          </dl>
          <div class='actions'>
            <button type='button' disabled={busy} onClick={() => { void change('SHIPPED') }}>Mark as shipped</button>
            <button type='button' class='danger' disabled={busy} onClick={() => { void change('CANCELED') }}>Cancel order</button>
          </div>
        </>
      )}
      {done !== undefined && <p role='status'>{done}</p>}
      <ProblemText problem={problem} />
    </section>
  )
}
