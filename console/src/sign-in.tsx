import { useEffect, useState } from 'preact/hooks'
import { api, problemOf, session, type Problem } from './api.js'
import { ProblemText } from './problem.js'

// The API's own log-in: the password, then the second factor's code when the API asks for it
// (401 MFA_REQUIRED with a challenge); or an identity provider the page names (a meta element the
// service writes), whose sign-in comes back to /console/ with `code` and `state`.

const BEGUN = 'console.signIn'

/** The providers this console may offer (those whose redirect URIs include /console/). */
const providers = (): string[] => document.querySelector<HTMLMetaElement>('meta[name="identity-providers"]')?.content.split(' ').filter((id) => id !== '') ?? []

const unreachable = { data: undefined, error: undefined, response: undefined }

export function SignIn ({ onSignedIn }: { onSignedIn: () => void }) {
  const [challenge, setChallenge] = useState<string | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [busy, setBusy] = useState(false)

  async function send (body: Record<string, string>): Promise<void> {
    setBusy(true)
    setProblem(undefined)
    const { data, error, response } = await api.POST('/v1/sessions', { body: body as never }).catch(() => unreachable)
    setBusy(false)
    if (data !== undefined) {
      session.keep(data.token)
      onSignedIn()
      return
    }
    const refused = problemOf(error, response)
    if (refused.code === 'MFA_REQUIRED') {
      setChallenge((error as { challenge: string }).challenge)
      return
    }
    setProblem(refused)
  }

  async function submit (event: SubmitEvent): Promise<void> {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    await send(challenge === undefined
      ? { email: String(form.get('email')), password: String(form.get('password')) }
      : { challenge, code: String(form.get('code')) })
  }

  // Begins a provider's sign-in: the state is kept in this tab, so only a sign-in begun here is
  // finished here (a code and state someone else sends the browser to are refused: login CSRF).
  async function begin (provider: string): Promise<void> {
    setBusy(true)
    setProblem(undefined)
    const { data, error, response } = await api.POST('/v1/oidc-authorizations', { body: { provider, redirectUri: `${location.origin}/console/` } }).catch(() => unreachable)
    if (data === undefined) { setBusy(false); setProblem(problemOf(error, response)); return }
    sessionStorage.setItem(BEGUN, JSON.stringify({ provider, state: new URL(data.authorizationUrl).searchParams.get('state') }))
    location.assign(data.authorizationUrl)
  }

  // Back from the provider: the code and state leave the address at once (history, copies).
  useEffect(() => {
    const params = new URLSearchParams(location.search)
    if (!params.has('state')) return
    history.replaceState(null, '', `/console/${location.hash}`)
    const kept = JSON.parse(sessionStorage.getItem(BEGUN) ?? 'null') as { provider: string, state: string } | null
    sessionStorage.removeItem(BEGUN)
    if (kept === null || kept.state !== params.get('state')) {
      setProblem({ status: 0, code: 'SIGN_IN_NOT_BEGUN', message: 'This sign-in was not begun in this browser.' })
      return
    }
    const refused = params.get('error')
    if (refused !== null) {
      setProblem({ status: 0, code: refused, message: `The provider did not sign you in: ${params.get('error_description') ?? refused}.` })
      return
    }
    void send({ provider: kept.provider, code: params.get('code') ?? '', state: kept.state })
  }, [])

  // Each field has its own key: otherwise Preact would turn the password's input into the code's,
  // keeping the password as the code's value, in clear.
  return (
    <main class='sign-in'>
      <h1>Console</h1>
      <form onSubmit={(event) => { void submit(event as unknown as SubmitEvent) }}>
        {challenge === undefined
          ? (
            <>
              <label for='email'>E-mail address</label>
              <input key='email' id='email' name='email' type='email' autocomplete='username' required />
              <label for='password'>Password</label>
              <input key='password' id='password' name='password' type='password' autocomplete='current-password' required />
            </>
            )
          : (
            <>
              <p>Your account has a second factor: enter the code from your authenticator app, or a recovery code.</p>
              <label for='code'>Code</label>
              <input key='code' id='code' name='code' inputMode='numeric' autocomplete='one-time-code' required />
            </>
            )}
        <button type='submit' disabled={busy}>{challenge === undefined ? 'Sign in' : 'Continue'}</button>
      </form>
      {challenge === undefined && providers().length > 0 && (
        <div class='actions' role='group' aria-label='Sign in with an identity provider'>
          {providers().map((provider) => <button key={provider} type='button' disabled={busy} onClick={() => { void begin(provider) }}>Sign in with {provider}</button>)}
        </div>
      )}
      <ProblemText problem={problem} />
    </main>
  )
}
