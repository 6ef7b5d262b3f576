import { availableParallelism } from 'node:os'
import { hash, verify } from '@node-rs/argon2'
import { WorkSlots } from '../background/work-slots.js'

// Argon2id at OWASP's minimum recommendation (m = 19 MiB, t = 2, p = 1). @node-rs/argon2 runs
// the work on the libuv thread pool, off the event loop.
// `algorithm: 2` is Argon2id (the package's const enum cannot be imported under verbatimModuleSyntax).
const OPTIONS = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const

// How many hashes run at once: one core is left to the event loop, the rest hash. Without a
// bound, a burst of log-ins fills the whole libuv pool (4 threads × 19 MiB each) on however few
// cores the process has: it gains no throughput on those cores, costs the memory, and starves
// the event loop, so every other request waits (measured in docs/decisions.md, Performance). The others
// wait in arrival order, with no limit to the line: a log-in waits its turn rather than being
// refused (the log-in limits bound how many come).
const hashing = new WorkSlots(Math.max(1, availableParallelism() - 1), Number.POSITIVE_INFINITY)
const inHashingSlot = async <T>(work: () => Promise<T>): Promise<T> => await hashing.run(work)

/**
 * The `password_hash` of an account without a password (made by an identity provider): no
 * Argon2 hash starts with "!", so no password ever verifies against it (the marker Django's
 * set_unusable_password uses). A password reset gives such an account a password.
 */
export const NO_PASSWORD = '!'

export function hasPassword (passwordHash: string): boolean {
  return !passwordHash.startsWith(NO_PASSWORD)
}

export async function hashPassword (password: string): Promise<string> {
  return await inHashingSlot(async () => await hash(password, OPTIONS))
}

export async function verifyPassword (passwordHash: string, password: string): Promise<boolean> {
  try {
    return await inHashingSlot(async () => await verify(passwordHash, password))
  } catch {
    return false
  }
}

let dummyHash: Promise<string> | undefined

/** Starts computing the dummy hash ahead of the first unknown e-mail (idempotent). */
export function prepareDummyHash (): Promise<string> {
  if (dummyHash === undefined) {
    dummyHash = hashPassword('dummy password that never matches')
    // A failure resurfaces at the first verification that awaits it; not an unhandled rejection.
    dummyHash.catch(() => {})
  }
  return dummyHash
}

/**
 * Verifies against a fixed hash when the e-mail is unknown, so that an unknown e-mail and a
 * wrong password take the same time and cannot be told apart.
 */
export async function verifyAgainstDummy (password: string): Promise<false> {
  await verifyPassword(await prepareDummyHash(), password)
  return false
}
