import { lookup as dnsLookup, promises as dns } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import ipaddr from 'ipaddr.js'
import type { Agent, buildConnector } from 'undici'

// A webhook endpoint is a URL a user chose, and the service sends requests to it from inside the
// operator's network: without this guard it is a way to probe that network, or reach the cloud
// metadata service, with the service's own reach. An endpoint is therefore refused unless it is
// https on a public address. The check at registration (checkTarget) gives the user a reason;
// the check that matters is the one on each connection (deliveryAgent), since a name may resolve
// to a public address when registered and to an internal one when delivered to.
//
// WEBHOOK_ALLOW_HOSTS lifts both rules for the hosts it names, for development and for receivers
// the operator runs inside the network on purpose.

/** The longest endpoint URL accepted: enough for any real receiver, short enough to store and log. */
import { allowList, parseAddress, type Address, type AllowList } from './allow-hosts.js'

export const MAX_URL_LENGTH = 2048

/** How long a delivery's connection may take to be established (DNS lookup included). */
const CONNECT_TIMEOUT_MS = 10_000

export interface TargetPolicy {
  /** parsed WEBHOOK_ALLOW_HOSTS */
  allowHosts: string[]
}

/** A human sentence: why an endpoint is refused. */
export type TargetRefusal = string

function allowedAddress (address: Address, allow: AllowList): boolean {
  // An IPv4-mapped address reaches the IPv4 address it holds, so an IPv4 entry allows it too.
  const forms = address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress() ? [address, address.toIPv4Address()] : [address]
  return forms.some((form) => allow.ranges.some(([network, bits]) => network.kind() === form.kind() && form.match(network, bits)))
}

// Readable names for ipaddr.js's ranges, as the noun a refusal ends with.
const RANGE_NAMES: Record<string, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  linkLocal: 'a link-local address',
  uniqueLocal: 'a private (unique local) address',
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  multicast: 'a multicast address',
  carrierGradeNat: 'a carrier-grade NAT address',
  ipv4Compatible: 'an IPv4-compatible IPv6 address',
  rfc6145: 'an IPv4-translated address',
  rfc6052: 'a NAT64 address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
  reserved: 'a reserved address'
}

/**
 * Why an address may not be connected to (the noun for a refusal), or undefined when it may:
 * inside the allow-list, or public unicast. Everything ipaddr.js sets apart from unicast is
 * refused, not only private and loopback ranges: the translation and tunnelling prefixes
 * (NAT64, 6to4, Teredo) can lead back into private IPv4 space, and the rest has no public
 * receiver behind it.
 */
function nonPublic (text: string, allow: AllowList): string | undefined {
  const parsed = parseAddress(text)
  // Not an address the guard can read: refused rather than guessed at.
  if (parsed === undefined) return 'an address that cannot be checked'
  if (allowedAddress(parsed, allow)) return undefined
  let address = parsed
  if (address instanceof ipaddr.IPv6 && address.isIPv4MappedAddress()) address = address.toIPv4Address()
  let range: string = address.range()
  // ::/96, deprecated IPv4-compatible addresses: ipaddr.js calls them unicast, but there is no
  // public receiver there, and a system that still translates them would reach IPv4 space.
  if (range === 'unicast' && address instanceof ipaddr.IPv6 && address.parts.slice(0, 6).every((part) => part === 0)) range = 'ipv4Compatible'
  if (range === 'unicast') return undefined
  return RANGE_NAMES[range] ?? `a ${range} address, not a public one`
}

/** The host of a URL without the brackets of an IPv6 literal. */
function bareHost (hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
}

function allowedHost (host: string, allow: AllowList): boolean {
  if (isIP(host) === 0) return allow.names.has(host.toLowerCase())
  const address = parseAddress(host)
  return address !== undefined && allowedAddress(address, allow)
}

function parseTarget (raw: string, allow: AllowList): { refusal: TargetRefusal } | { host: string, allowed: boolean } {
  if (raw.length > MAX_URL_LENGTH) return { refusal: `must be at most ${MAX_URL_LENGTH} characters` }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { refusal: 'is not a valid URL' }
  }
  // The parsed form can be longer than the text (percent-encoding); it is the one sent and stored.
  if (url.href.length > MAX_URL_LENGTH) return { refusal: `must be at most ${MAX_URL_LENGTH} characters` }
  const host = bareHost(url.hostname)
  const allowed = host !== '' && allowedHost(host, allow)
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowed)) return { refusal: 'must use https' }
  // Credentials in an endpoint URL end up in logs and in the dashboard that lists endpoints;
  // a receiver that needs a secret gets the signature instead.
  if (url.username !== '' || url.password !== '') return { refusal: 'must not contain a user name or password' }
  // A fragment is never sent, so one in an endpoint is a mistake; `#` alone leaves hash empty.
  if (url.href.includes('#')) return { refusal: 'must not contain a fragment' }
  if (host === '') return { refusal: 'must have a host' }
  return { host, allowed }
}

/** Syntax and literal-address check, no DNS. Returns the reason it is refused, or undefined when acceptable. */
export function checkTargetUrl (raw: string, policy: TargetPolicy): TargetRefusal | undefined {
  const allow = allowList(policy.allowHosts)
  const target = parseTarget(raw, allow)
  if ('refusal' in target) return target.refusal
  if (target.allowed || isIP(target.host) === 0) return undefined
  const reason = nonPublic(target.host, allow)
  return reason === undefined ? undefined : `is ${reason} (${target.host})`
}

/**
 * checkTargetUrl, then resolves the host (dns.promises.lookup with {all:true}) and refuses when
 * ANY resolved address is forbidden, or when the name does not resolve ('does not resolve'). An
 * allowed hostname skips the address check.
 *
 * This is for telling the user at registration; it proves nothing about later deliveries, whose
 * connections deliveryAgent checks again.
 */
export async function checkTarget (raw: string, policy: TargetPolicy): Promise<TargetRefusal | undefined> {
  const allow = allowList(policy.allowHosts)
  const target = parseTarget(raw, allow)
  if ('refusal' in target) return target.refusal
  if (target.allowed) return undefined
  if (isIP(target.host) !== 0) {
    const reason = nonPublic(target.host, allow)
    return reason === undefined ? undefined : `is ${reason} (${target.host})`
  }
  let addresses: Array<{ address: string }>
  try {
    addresses = await dns.lookup(target.host, { all: true })
  } catch {
    return 'does not resolve'
  }
  if (addresses.length === 0) return 'does not resolve'
  // Any one, not all: a delivery may connect to whichever address comes first.
  for (const { address } of addresses) {
    const reason = nonPublic(address, allow)
    // The address itself is not told: the name is the user's, but what the operator's resolver
    // answers for it (an internal name's address) is not theirs to learn.
    if (reason !== undefined) return `resolves to ${reason}`
  }
  return undefined
}

/**
 * Error thrown (as the connection error) when a delivery's connection would go to a forbidden
 * address. has `code = 'WEBHOOK_TARGET_REFUSED'` and a message naming the address.
 */
export class TargetRefusedError extends Error {
  readonly code = 'WEBHOOK_TARGET_REFUSED' as const

  /**
   * @param address the address refused
   * @param reason what it is, as a noun (`a loopback address`)
   * @param host the name it was resolved from, when it was
   */
  readonly address: string
  readonly host: string | undefined

  constructor (address: string, reason: string, host?: string) {
    super(`refused to connect to ${address}${host === undefined ? '' : ` (resolved from ${host})`}: it is ${reason}`)
    this.name = 'TargetRefusedError'
    this.address = address
    this.host = host
  }
}

/**
 * The lookup of a delivery's connection: the addresses it hands to the socket are the only ones
 * the socket can connect to, so checking them here leaves no window between check and use for
 * a name that resolves differently each time (DNS rebinding). Node calls it in both of its
 * forms: `all: true` (when it tries several addresses, the default since Node 20) and one address.
 */
function guardedLookup (allow: AllowList): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) {
        callback(error, options.all === true ? [] : '')
        return
      }
      // Refused when any address is, as checkTarget does: a name that mixes public and internal
      // addresses is not one an honest receiver has.
      for (const { address } of addresses) {
        const reason = nonPublic(address, allow)
        if (reason !== undefined) {
          callback(new TargetRefusedError(address, reason, hostname), options.all === true ? [] : '')
          return
        }
      }
      const first = addresses[0]
      if (options.all === true) callback(null, addresses)
      else if (first === undefined) callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '')
      else callback(null, first.address, first.family)
    })
  }
}

/**
 * An undici Agent for deliveries: every connection is checked on the address actually connected
 * to (defeats DNS rebinding): a custom `connect` built with undici's buildConnector whose DNS
 * lookup refuses forbidden addresses for non-allowed hostnames, and which refuses IP-literal
 * hosts that are forbidden, and as a final check verifies socket.remoteAddress after connect
 * (destroying the socket with TargetRefusedError). Connect timeout 10 s by default; keep-alive
 * connections are reused. Redirects are not followed (undici's default): a redirect is answered
 * to the delivery as the response it is, so a public receiver cannot point it inward.
 */
export async function deliveryAgent (policy: TargetPolicy, options: { connectTimeoutMs?: number } = {}): Promise<Agent> {
  // undici is loaded with the first delivery: an instance that sends none keeps its memory (about 9 MiB).
  const { Agent, buildConnector } = await import('undici')
  const allow = allowList(policy.allowHosts)
  const timeout = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS
  const trusted = buildConnector({ timeout })
  const guarded = buildConnector({ timeout, lookup: guardedLookup(allow) })

  const connect: buildConnector.connector = (connectOptions, callback) => {
    const host = bareHost(connectOptions.hostname)
    // A name the operator allowed goes wherever it resolves: that is what allowing it means.
    if (isIP(host) === 0 && allow.names.has(host.toLowerCase())) {
      trusted(connectOptions, callback)
      return
    }
    // Node does not call lookup for an address literal, so the guarded lookup never sees one.
    if (isIP(host) !== 0) {
      const reason = nonPublic(host, allow)
      if (reason !== undefined) {
        callback(new TargetRefusedError(host, reason), null)
        return
      }
    }
    guarded(connectOptions, (error, socket) => {
      if (error !== null) {
        callback(error, null)
        return
      }
      // The lookup and the literal check above should make this unreachable; it is what still
      // holds if a connection is ever made some other way (a future option, a proxy).
      const remote = socket.remoteAddress
      const reason = remote === undefined ? 'an unknown address (the socket has closed)' : nonPublic(remote, allow)
      if (reason !== undefined) {
        const refused = new TargetRefusedError(remote ?? host, reason, isIP(host) === 0 ? host : undefined)
        socket.destroy(refused)
        callback(refused, null)
        return
      }
      callback(null, socket)
    })
  }
  return new Agent({ connect })
}
