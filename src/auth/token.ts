import { hash, randomBytes } from 'node:crypto'

// Bearer tokens are 256 random bits; the database keeps only their SHA-256, so a leaked
// database does not leak usable tokens. (A fast hash is right here: the token is already
// full-entropy, unlike a password.)
export function newToken (): { token: string, hash: string } {
  const token = randomBytes(32).toString('base64url')
  return { token, hash: hashToken(token) }
}

export function hashToken (token: string): string {
  return hash('sha256', token, 'hex')
}
