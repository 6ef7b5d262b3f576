// A request's URL as the log may show it: every credential in it replaced by `[REDACTED]`.
//
// The URL is judged as the service reads it, not as it is spelled: a query parameter's name is
// percent-decoded before it is compared (`?%74icket=` is the `ticket` the router hands on),
// without regard to case (`?Ticket=` is refused, but it was still sent), and a value is
// redacted both for its parameter's name (anything named like a credential) and for its own
// shape (an API key `rk_…` or a stream ticket `est_…`, under whatever name or in a path
// segment, even percent-encoded). The rest of the URL is kept as it came, so a line still shows
// what was asked.

/** Parameter names that carry credentials: a ticket, token, key, secret, password, signature or an authorization code. */
const CREDENTIAL_NAME = /ticket|token|secret|passw|signature|credential|(?:^|[_-]|api)key$|^sig$|^code$|^auth(?:orization)?$/i
/** The shape of this service's own credentials: an API key or a stream ticket. */
const CREDENTIAL_VALUE = /(?:^|[^a-z0-9])(?:rk|est)_[a-z0-9_-]{8,}/i
/** Whether a URL may hold a credential at all (most URLs do not, and are returned as they are). */
const MAY_HOLD = /tick|tok|key|secr|pass|sig|code|auth|rk_|est_|%/i

const REDACTED = '[REDACTED]'

/** Percent-decoded as a query parser decodes (`+` is a space); the text itself if it is not valid encoding. */
function decoded (text: string): string {
  if (!text.includes('%') && !text.includes('+')) return text
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '))
  } catch {
    return text
  }
}

function redactQuery (query: string): string {
  return query.split('&').map((pair) => {
    const equals = pair.indexOf('=')
    const name = equals === -1 ? pair : pair.slice(0, equals)
    const value = equals === -1 ? '' : pair.slice(equals + 1)
    if (CREDENTIAL_NAME.test(decoded(name)) && equals !== -1) return `${name}=${REDACTED}`
    if (CREDENTIAL_VALUE.test(decoded(value))) return `${name}=${REDACTED}`
    if (equals === -1 && CREDENTIAL_VALUE.test(decoded(name))) return REDACTED
    return pair
  }).join('&')
}

function redactPath (path: string): string {
  if (!/rk_|est_|%/i.test(path)) return path
  return path.split('/').map((segment) => CREDENTIAL_VALUE.test(decoded(segment)) ? REDACTED : segment).join('/')
}

export function redactedUrl (url: string): string {
  if (!MAY_HOLD.test(url)) return url
  const mark = url.indexOf('?')
  if (mark === -1) return redactPath(url)
  return `${redactPath(url.slice(0, mark))}?${redactQuery(url.slice(mark + 1))}`
}
