import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import type { components } from '../../client/schema.js'
import { api, problemOf, session, type Problem } from './api.js'
import { ProblemText } from './problem.js'
import { EventsScreen } from './events.js'
import { OrderScreen, OrdersScreen } from './orders.js'
import { NewProductScreen, ProductScreen, ProductsScreen } from './products.js'
import { SignIn } from './sign-in.js'
import { SystemScreen } from './system.js'
import { UserScreen, UsersScreen } from './users.js'
import { WebhookScreen, WebhooksScreen } from './webhooks.js'
import './console.css'

// The shell: who is signed in (GET /v1/sessions/current), the navigation, and the screen the
// address's fragment names (#/orders, #/orders/{id}, #/products, #/products/new, #/products/{id},
// #/users, #/users/{id}, #/webhooks, #/webhooks/{id}, #/events, #/system). A fragment, so the
// service serves one page and the browser never sends the route.

type CurrentSession = components['schemas']['CurrentSession']
type ManagedUser = components['schemas']['ManagedUser']

const SCREENS = [['#/orders', 'Orders'], ['#/products', 'Products'], ['#/users', 'Users'], ['#/webhooks', 'Webhooks'], ['#/events', 'Events'], ['#/system', 'System']] as const
const HOME = '#/orders'

function useHash (): string {
  const [hash, setHash] = useState(location.hash === '' ? HOME : location.hash)
  useEffect(() => {
    const changed = (): void => { setHash(location.hash === '' ? HOME : location.hash) }
    addEventListener('hashchange', changed)
    return () => { removeEventListener('hashchange', changed) }
  }, [])
  return hash
}

/** The screen of the address's fragment; an unknown one shows the orders. */
function route (hash: string, selected: ManagedUser | undefined, setSelected: (user: ManagedUser) => void) {
  const [, screen, id] = /^#\/([a-z]+)(?:\/([^/]+))?$/.exec(hash) ?? []
  switch (screen) {
    case 'products':
      if (id === 'new') return <NewProductScreen />
      return id === undefined ? <ProductsScreen /> : <ProductScreen key={id} id={id} />
    case 'users':
      // A user's page shows the account as the list gave it (GET /v1/users); opened by its
      // address alone, the list comes first.
      return id !== undefined && selected !== undefined && String(selected.id) === id
        ? <UserScreen user={selected} changed={setSelected} />
        : <UsersScreen open={setSelected} />
    case 'webhooks': return id === undefined ? <WebhooksScreen /> : <WebhookScreen key={id} id={id} />
    case 'events': return <EventsScreen />
    case 'system': return <SystemScreen />
    default: return id === undefined ? <OrdersScreen /> : <OrderScreen key={id} id={id} />
  }
}

function App () {
  const [current, setCurrent] = useState<CurrentSession | null | undefined>(session.token() === null ? null : undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [selected, setSelected] = useState<ManagedUser | undefined>(undefined)
  const hash = useHash()

  async function whoAmI (): Promise<void> {
    const { data, error, response } = await api.GET('/v1/sessions/current')
    if (data !== undefined) { setCurrent(data); return }
    session.forget()
    setCurrent(null)
    if (response.status !== 401) setProblem(problemOf(error, response))
  }
  useEffect(() => { if (current === undefined) void whoAmI().catch(() => { setProblem(problemOf(undefined, undefined)) }) }, [current])

  async function signOut (): Promise<void> {
    await api.DELETE('/v1/sessions/current').catch(() => undefined)
    session.forget()
    setCurrent(null)
    setSelected(undefined)
  }

  if (current === null) return <SignIn onSignedIn={() => { setProblem(undefined); setCurrent(undefined) }} />
  if (current === undefined) return <main><p aria-live='polite'>Loading…</p><ProblemText problem={problem} /></main>

  const signOutButton = <button type='button' onClick={() => { void signOut() }}>Sign out</button>
  if (current.user.role !== 'ADMIN') {
    return (
      <main class='refused'>
        <h1>Console</h1>
        <p>This console is for administrators. You are signed in as {current.user.email}, which is not an administrator's account.</p>
        {signOutButton}
      </main>
    )
  }

  const screen = route(hash, selected, setSelected)
  return (
    <>
      <header>
        <span class='brand'>Console</span>
        <nav aria-label='Console'>
          <ul>{SCREENS.map(([href, name]) => <li key={href}><a href={href} aria-current={hash === href || hash.startsWith(`${href}/`) ? 'page' : undefined}>{name}</a></li>)}</ul>
        </nav>
        <span class='who'>{current.user.email}</span>
        {signOutButton}
      </header>
      <main>{screen}</main>
    </>
  )
}

render(<App />, document.getElementById('app')!)
