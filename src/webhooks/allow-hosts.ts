import { isIPv4, isIPv6 } from 'node:net'
import ipaddr from 'ipaddr.js'

// WEBHOOK_ALLOW_HOSTS read once: the hosts, addresses and CIDR ranges an operator lets webhooks
// reach over http and on private addresses (target-guard.ts judges targets against it). Apart
// from the guard, so that reading the configuration does not load the delivery machinery.

export type Address = ipaddr.IPv4 | ipaddr.IPv6

export interface AllowList {
  names: Set<string>
  ranges: Array<[Address, number]>
}

// Host-name labels as DNS allows them, plus `_`, which container and service-discovery names
// use and the URL parser accepts.
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/

/**
 * An address as the kernel will read it, or undefined when it is not one. Only the strict forms
 * Node accepts are taken (IPv4 as four decimal parts), and IPv6 is read through the URL parser
 * first: ipaddr.js reads `::a.b.c.d` as IPv4-mapped, where the kernel sees an IPv4-compatible
 * address, and a guard must judge the address that is connected to, not another one.
 */
export function parseAddress (text: string): Address | undefined {
  if (isIPv4(text)) return ipaddr.IPv4.parse(text)
  if (!isIPv6(text)) return undefined
  try {
    return ipaddr.IPv6.parse(new URL(`http://[${text}]/`).hostname.slice(1, -1))
  } catch {
    // A zone index (fe80::1%eth0) is valid for Node but not for the URL parser; such an address
    // is link-local, so it would be refused anyway.
    return undefined
  }
}

function parseRange (entry: string): [Address, number] | undefined {
  const slash = entry.indexOf('/')
  if (slash === -1) {
    const address = parseAddress(entry)
    return address === undefined ? undefined : [address, address.kind() === 'ipv4' ? 32 : 128]
  }
  const address = parseAddress(entry.slice(0, slash))
  const bits = entry.slice(slash + 1)
  if (address === undefined || !/^\d{1,3}$/.test(bits)) return undefined
  const prefix = Number(bits)
  return prefix <= (address.kind() === 'ipv4' ? 32 : 128) ? [address, prefix] : undefined
}

/**
 * The host name an allow-list entry stands for, or undefined when the entry is not one. A name
 * the URL parser would read as an IPv4 address (`127.1`, `0x7f.1`) is not a name: an entry
 * written so would never match the host of a URL, and silently allow nothing.
 */
function parseHostname (entry: string): string | undefined {
  const name = entry.toLowerCase()
  if (!HOSTNAME.test(name)) return undefined
  try {
    return new URL(`http://${name}/`).hostname === name ? name : undefined
  } catch {
    return undefined
  }
}

/**
 * WEBHOOK_ALLOW_HOSTS: a comma-separated list of host names, IP addresses and CIDR ranges. A bad
 * entry throws rather than being skipped, since a typo would otherwise go unnoticed until
 * deliveries to that host fail.
 */
export function parseAllowHosts (raw: string | undefined): string[] {
  if (raw === undefined) return []
  const entries: string[] = []
  for (const part of raw.split(',')) {
    const entry = part.trim()
    if (entry === '') continue
    if (parseRange(entry) !== undefined) {
      entries.push(entry)
      continue
    }
    const name = parseHostname(entry)
    if (name === undefined) {
      throw new Error(`WEBHOOK_ALLOW_HOSTS: "${entry}" is neither a host name, an IP address nor a CIDR range (such as 10.0.0.0/8 or fd00::/8)`)
    }
    entries.push(name)
  }
  return entries
}

export function allowList (allowHosts: string[]): AllowList {
  const list: AllowList = { names: new Set(), ranges: [] }
  for (const entry of allowHosts) {
    const range = parseRange(entry)
    if (range !== undefined) list.ranges.push(range)
    else list.names.add(entry.toLowerCase())
  }
  return list
}

