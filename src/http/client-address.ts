import { isIPv6 } from 'node:net'
import type { FastifyRequest } from 'fastify'

// Every limit that is kept per client (the general rate limit, log-in failures, sign-ups, mail
// and token attempts) names the client the same way, so that no limit can be dodged by writing
// one address another way: the address in one canonical form, an IPv4-mapped IPv6 address as
// the IPv4 address it is, and an IPv6 address by its /64, since one client usually holds a whole
// /64 (a home, a phone, a virtual machine) and can pick any address in it.

const MAPPED_IPV4 = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i

/** The first four groups of an IPv6 address, as numbers: `::` expanded where it stands. */
function firstGroups (address: string): number[] {
  const [head, tail] = address.split('::') as [string, string | undefined]
  const groupsOf = (part: string | undefined): string[] => part === undefined || part === '' ? [] : part.split(':')
  const before = groupsOf(head)
  let groups = before
  if (tail !== undefined) {
    const after = groupsOf(tail)
    // An embedded IPv4 part at the end stands for two groups.
    const width = after.reduce((n, group) => n + (group.includes('.') ? 2 : 1), 0)
    groups = [...before, ...Array<string>(Math.max(0, 8 - before.length - width)).fill('0'), ...after]
  }
  return groups.slice(0, 4).map((group) => parseInt(group, 16))
}

/** The key a client is counted under: `10.1.2.3`, or `2001:db8:0:1::/64` for any address of that /64. */
export function clientKey (ip: string): string {
  if (!ip.includes(':') || !isIPv6(ip)) return ip
  const mapped = MAPPED_IPV4.exec(ip)
  if (mapped !== null) return mapped[1]!
  return firstGroups(ip.split('%')[0]!).map((group) => group.toString(16)).join(':') + '::/64'
}

/** The request's client as every limit counts it (request.ip: the forwarded address when TRUST_PROXY names the peer). */
export function clientOf (request: FastifyRequest): string {
  return clientKey(request.ip)
}
