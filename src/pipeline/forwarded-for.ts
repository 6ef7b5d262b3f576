import { isIP } from 'node:net'
import type { IncomingHttpHeaders } from 'node:http'

// Behind a trusted proxy (TRUST_PROXY) the client address is read from X-Forwarded-For, from
// the right: the proxies named are skipped, and the first entry that is not one of them is the
// client. That entry is whatever the client sent when the proxy passes the client's own header
// through, so it must at least be an address: `x\`, `123` or `1.2.3.4:80` are not, and taken as
// one they would give every junk value a rate-limit window (and a log-in throttle) of its own
// and carry any text into the log. So the header is read only up to its nearest entry that is
// not an IP address (as Node's net.isIP reads one: dotted quads and IPv6, none of ipaddr.js's
// short or hexadecimal IPv4 forms): that entry and all before it are dropped, and the client is
// then the last proxy that handed the request on, itself a real address.

/** The entries of an X-Forwarded-For value from its nearest one back to the first that is not an IP address (undefined: none). */
export function trustworthyForwardedFor (header: string): string | undefined {
  const entries = header.split(',')
  // Where the run of addresses that ends the header starts.
  let start = entries.length
  while (start > 0 && isIP(entries[start - 1]!.trim()) !== 0) start--
  if (start === 0) return header
  if (start === entries.length) return undefined
  return entries.slice(start).join(',')
}

/** With TRUST_PROXY set, the request path's first step (request-hooks.ts): the request's X-Forwarded-For cut to what can be trusted to be addresses, before anything reads the client address. */
export function trustForwardedFor (headers: IncomingHttpHeaders): void {
  const header = headers['x-forwarded-for']
  if (typeof header !== 'string') return
  const kept = trustworthyForwardedFor(header)
  if (kept === undefined) delete headers['x-forwarded-for']
  else if (kept !== header) headers['x-forwarded-for'] = kept
}
