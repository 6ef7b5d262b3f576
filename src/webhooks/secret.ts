import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

// Signing secrets and signatures, as the Standard Webhooks specification defines them: a secret
// is `whsec_` and 24 random bytes in base64; a signature is `v1,` and the base64 HMAC-SHA256 of
// `id.timestamp.body`. The standardwebhooks package signs, so the service signs exactly as that
// package verifies on a receiver.

export function newSecret (): string {
  return 'whsec_' + randomBytes(24).toString('base64')
}

/** The `webhook-signature` header: one signature per secret, space-separated (both during a rotation). */
export function signatures (secrets: string[], messageId: string, at: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(messageId, at, body)).join(' ')
}
