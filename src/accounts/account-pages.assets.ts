// The account pages' HTML, script and stylesheet, as strings: tsc compiles only .ts files and
// the built server runs from dist/, so they live here rather than as files beside the source.
// See account-pages.ts for why they are made the way they are. The HTML holds no inline script,
// no style attribute and no event-handler attribute (the pages' CSP forbids them); the script
// writes only text (textContent), never HTML.

/** The HTML of one page around its own content. */
function page (name: string, title: string, content: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<title>${title}</title>
<link rel="stylesheet" href="/account/account.css">
<script src="/account/account.js" defer></script>
</head>
<body data-page="${name}">
<main>
<h1>${title}</h1>
${content}
<noscript><p class="error">This page needs JavaScript: turn it on and open the link again.</p></noscript>
<div id="result" role="status" aria-live="polite"></div>
</main>
</body>
</html>
`
}

// The button starts disabled: only the script enables it, once it has found the token. The
// password field has no name, so even a form sent without the script (which form-action 'none'
// forbids anyway) would carry no password in a URL.

export const EMAIL_VERIFICATION_HTML = page('email-verification', 'Verify your e-mail address', `<p>Press the button to confirm that this e-mail address is yours.</p>
<form id="form">
<button id="submit" type="submit" disabled>Verify my e-mail address</button>
</form>`)

export const PASSWORD_RESET_HTML = page('password-reset', 'Choose a new password', `<p>Choose a new password for your account: 8 to 50 characters.</p>
<form id="form">
<label for="new-password">New password</label>
<input id="new-password" type="password" autocomplete="new-password" minlength="8" maxlength="50" required aria-describedby="new-password-error">
<p id="new-password-error" class="field-error error" hidden></p>
<button id="submit" type="submit" disabled>Set the new password</button>
</form>`)

export const ACCOUNT_JS = `'use strict';
// The script of the account pages (/account/email-verification, /account/password-reset).
// It sends nothing when the page opens (mail scanners open links): only pressing the button
// spends the token. The token is read here from the address and removed from it at once.
(() => {
  const page = document.body.dataset.page;
  const form = document.getElementById('form');
  const button = document.getElementById('submit');
  const result = document.getElementById('result');
  const password = document.getElementById('new-password');
  const passwordError = document.getElementById('new-password-error');
  const verifying = page === 'email-verification';
  const endpoint = verifying ? '/v1/email-verifications' : '/v1/password-resets';
  const done = verifying ? 'Your e-mail address is verified.' : 'Your password is changed. Log in with the new one.';
  // Maps, not objects: a code or field such as 'constructor' must find nothing.
  const hints = new Map([['INVALID_TOKEN', 'Ask for a new mail and use the link in the newest one.']]);
  const fieldNames = new Map([['newPassword', 'The new password'], ['token', 'The link']]);

  // One field's fault as a sentence: 'The new password must be at least 8 characters.'
  const sentence = (field, message) => (fieldNames.get(field) ?? String(field ?? 'The request')) + ' ' + message + (message.endsWith('.') ? '' : '.');

  // Shows the outcome: a first line, then further lines (each its own paragraph).
  function show (kind, text, more = []) {
    result.className = kind;
    result.replaceChildren();
    for (const line of [text, ...more]) {
      const p = document.createElement('p');
      p.textContent = line;
      result.append(p);
    }
  }

  function showFieldError (text) {
    if (!passwordError) return;
    passwordError.textContent = text;
    passwordError.hidden = text === '';
    if (text === '') password.removeAttribute('aria-invalid');
    else password.setAttribute('aria-invalid', 'true');
  }

  // The token, then the address without it (history, bookmarks and a shared screen keep no copy).
  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  if (params.has('token')) {
    params.delete('token');
    const rest = params.toString();
    history.replaceState(history.state, '', location.pathname + (rest === '' ? '' : '?' + rest) + location.hash);
  }
  if (token === null || token.trim() === '') {
    button.disabled = true;
    show('error', 'This link is incomplete: open the whole link from the mail.');
    // Enter in the password field must not send the form either.
    form.addEventListener('submit', (event) => event.preventDefault());
    return;
  }
  button.disabled = false;

  // The error body ({ code, message, errors[] }), or null when the answer is not one.
  async function problemOf (response) {
    try {
      const body = await response.json();
      return body !== null && typeof body === 'object' && typeof body.message === 'string' ? body : null;
    } catch {
      return null;
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (button.disabled) return;
    showFieldError('');
    show('pending', 'One moment…');
    button.disabled = true;
    const payload = verifying ? { token } : { token, newPassword: password.value };
    let response;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(payload),
        credentials: 'omit',
        cache: 'no-store'
      });
    } catch {
      show('error', 'The server could not be reached. Check your connection and try again.');
      button.disabled = false;
      return;
    }
    if (response.status === 204) {
      if (password) password.value = '';
      form.hidden = true;
      show('success', done);
      return;
    }
    const problem = await problemOf(response);
    if (problem === null) {
      show('error', 'Something went wrong (HTTP ' + response.status + '). Try again later.');
      button.disabled = false;
      return;
    }
    const more = [];
    for (const error of Array.isArray(problem.errors) ? problem.errors : []) {
      if (typeof error?.message !== 'string') continue;
      // A fault of the password is shown beside the field; any other under the message.
      if (error.field === 'newPassword' && passwordError) showFieldError(sentence(error.field, error.message));
      else more.push(sentence(error.field, error.message));
    }
    if (hints.has(problem.code)) more.push(hints.get(problem.code));
    const wait = Number(response.headers.get('retry-after'));
    if (response.status === 429 && Number.isInteger(wait) && wait > 0) more.push('Try again in ' + wait + (wait === 1 ? ' second.' : ' seconds.'));
    show('error', problem.message, more);
    // The same token will not work again; anything else may be tried again.
    button.disabled = problem.code === 'INVALID_TOKEN';
    if (!button.disabled && password && password.getAttribute('aria-invalid') === 'true') password.focus();
  });
})();
`

export const ACCOUNT_CSS = `/* The account pages: one narrow column in the system font, large touch targets. */
:root { color-scheme: light dark; --accent: #1a5fb4; --error: #b00020; --success: #1e7b34; }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body {
  margin: 0;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 1.0625rem;
  line-height: 1.5;
  background: Canvas;
  color: CanvasText;
}
main { max-width: 32rem; margin: 0 auto; padding: 2rem 1.25rem; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 1rem; }
form { display: flex; flex-direction: column; gap: 0.75rem; margin: 1.5rem 0; }
label { font-weight: 600; }
input {
  font: inherit;
  min-height: 3rem;
  padding: 0.5rem 0.75rem;
  border: 1px solid #8a8a8a;
  border-radius: 0.5rem;
  width: 100%;
}
input[aria-invalid="true"] { border-color: var(--error); }
button {
  font: inherit;
  font-weight: 600;
  min-height: 3rem;
  padding: 0.75rem 1.25rem;
  border: 0;
  border-radius: 0.5rem;
  background: var(--accent);
  color: #fff;
  cursor: pointer;
}
button:disabled { opacity: 0.55; cursor: not-allowed; }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
[hidden] { display: none !important; }
#result p, .field-error { margin: 0 0 0.5rem; }
.error { color: var(--error); }
.success { color: var(--success); font-weight: 600; }
@media (prefers-color-scheme: dark) {
  :root { --accent: #78aeed; --error: #ff7b7b; --success: #7fd48f; }
  button { color: #000; }
}
`
