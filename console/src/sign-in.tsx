import { useState } from 'preact/hooks'
import { api, problemOf, session, type Problem } from './api.js'
import { ProblemText } from './problem.js'

// The API's own log-in: the password, then the second factor's code when the API asks for it
// (401 MFA_REQUIRED with a challenge).

export function SignIn ({ onSignedIn }: { onSignedIn: () => void }) {
  const [challenge, setChallenge] = useState<string | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [busy, setBusy] = useState(false)

  async function submit (event: SubmitEvent): Promise<void> {
    event.preventDefault()
    const form = new FormData(event.currentTarget as HTMLFormElement)
    setBusy(true)
    setProblem(undefined)
    const body = challenge === undefined
      ? { email: String(form.get('email')), password: String(form.get('password')) }
      : { challenge, code: String(form.get('code')) }
    const { data, error, response } = await api.POST('/v1/sessions', { body: body as never }).catch(() => ({ data: undefined, error: undefined, response: undefined }))
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
      <ProblemText problem={problem} />
    </main>
  )
}
