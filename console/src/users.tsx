import { useEffect, useState } from 'preact/hooks'
import type { components } from '../../client/schema.js'
import { api, problemOf, type Problem } from './api.js'
import { date } from './format.js'
import { usePages } from './pages.js'
import { ProblemText } from './problem.js'

type ManagedUser = components['schemas']['ManagedUser']
type Order = components['schemas']['Order']
type Identity = components['schemas']['Identity']

/** GET /v1/users: a page at a time, searched by a part of the address or name. */
export function UsersScreen ({ open }: { open: (user: ManagedUser) => void }) {
  const [q, setQ] = useState('')
  const pages = usePages((search: string, cursor) => api.GET('/v1/users', {
    params: { query: { limit: 20, ...(search.trim() === '' ? {} : { q: search }), ...(cursor === undefined ? {} : { cursor }) } }
  }), '')
  useEffect(() => { void pages.first('') }, [])

  const users = pages.items
  return (
    <section aria-labelledby='users-title'>
      <h1 id='users-title'>Users</h1>
      <form role='search' onSubmit={(event) => { event.preventDefault(); void pages.first(q) }}>
        <label for='user-search'>Address or name (3 characters or more)</label>
        <input id='user-search' type='search' value={q} onInput={(event) => { setQ((event.target as HTMLInputElement).value) }} />
        <button type='submit'>Search</button>
      </form>
      <ProblemText problem={pages.problem} />
      {pages.loading && <p aria-live='polite'>Loading…</p>}
      {!pages.loading && pages.problem === undefined && users.length === 0 && <p>No account matches.</p>}
      <ul class='cards'>
        {users.map((user) => (
          <li key={user.id}>
            <a href={`#/users/${user.id}`} onClick={() => { open(user) }}>{user.email}</a>
            <span>{user.name}</span>
            <span>{user.role === 'ADMIN' ? 'Administrator' : 'User'} · {user.emailVerified ? 'address proven' : 'address not proven'} · {user.mfaEnabled ? 'second factor on' : 'no second factor'}</span>
          </li>
        ))}
      </ul>
      {pages.more && <button type='button' onClick={() => { void pages.next() }}>More accounts</button>}
    </section>
  )
}

/** One account: its state, its providers, its orders, and the two actions an operator takes for it. */
export function UserScreen ({ user, changed }: { user: ManagedUser, changed: (user: ManagedUser) => void }) {
  const [orders, setOrders] = useState<Order[] | undefined>(undefined)
  const [identities, setIdentities] = useState<Identity[] | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [done, setDone] = useState<string | undefined>(undefined)
  useEffect(() => {
    void api.GET('/v1/users/{id}/orders', { params: { path: { id: String(user.id) }, query: { limit: 20 } } }).then(({ data, error, response }) => {
      if (data !== undefined) setOrders(data)
      else setProblem(problemOf(error, response))
    }, () => { setProblem(problemOf(undefined, undefined)) })
    void api.GET('/v1/users/{id}/identities', { params: { path: { id: String(user.id) } } }).then(({ data, error, response }) => {
      if (data !== undefined) setIdentities(data)
      else setProblem(problemOf(error, response))
    }, () => { setProblem(problemOf(undefined, undefined)) })
  }, [user.id])

  async function signOutEverywhere (): Promise<void> {
    if (!confirm(`Sign ${user.email} out of every session? Their API keys stay.`)) return
    setProblem(undefined)
    const { error, response } = await api.DELETE('/v1/users/{id}/sessions', { params: { path: { id: String(user.id) } } })
    if (response.status === 204) setDone('Every session of this account has ended.')
    else setProblem(problemOf(error, response))
  }
  async function removeFactor (): Promise<void> {
    if (!confirm(`Remove the second factor of ${user.email}? They will sign in with their password alone until they add one again.`)) return
    setProblem(undefined)
    const { error, response } = await api.DELETE('/v1/users/{id}/totp', { params: { path: { id: String(user.id) } }, body: {} })
    if (response.status === 204) {
      setDone('The second factor was removed; the user was mailed.')
      changed({ ...user, mfaEnabled: false })
    } else setProblem(problemOf(error, response))
  }

  return (
    <section aria-labelledby='user-title'>
      <h1 id='user-title'>{user.email}</h1>
      <dl class='facts'>
        <dt>Name</dt><dd>{user.name}</dd>
        <dt>Role</dt><dd>{user.role === 'ADMIN' ? 'Administrator' : 'User'}</dd>
        <dt>Address</dt><dd>{user.emailVerified ? 'proven' : 'not proven'}{user.pendingEmail === null ? '' : `; ${user.pendingEmail} waits for its proof`}</dd>
        <dt>Second factor</dt><dd>{user.mfaEnabled ? 'on' : 'off'}</dd>
        <dt>Identity providers</dt>
        <dd>{identities === undefined ? '…' : identities.length === 0 ? 'none' : identities.map((identity) => `${identity.provider}${identity.email === null ? '' : ` (${identity.email})`}`).join(', ')}</dd>
        <dt>Created</dt><dd>{date(user.createdAt)}</dd>
      </dl>
      <div class='actions'>
        <button type='button' onClick={() => { void signOutEverywhere() }}>Sign out everywhere</button>
        {user.mfaEnabled && <button type='button' class='danger' onClick={() => { void removeFactor() }}>Remove second factor</button>}
      </div>
      {done !== undefined && <p role='status'>{done}</p>}
      <ProblemText problem={problem} />
      <h2>Orders</h2>
      {orders === undefined && problem === undefined && <p aria-live='polite'>Loading…</p>}
      {orders !== undefined && orders.length === 0 && <p>No orders.</p>}
      {orders !== undefined && orders.length > 0 && (
        <ul class='cards'>
          {orders.map((order) => <li key={order.id}><span>Order {order.id}: {order.status}</span><span>{order.quantity} × product {order.productId}, {date(order.createdAt)}</span></li>)}
        </ul>
      )}
    </section>
  )
}
