import { randomBytes } from 'node:crypto'
import type { Webhook } from 'standardwebhooks'
import { lazyRequire } from '../lazy-require.js'

// Signing secrets and signatures, as the Standard Webhooks specification defines them: a secret
// is `whsec_` and 24 random bytes in base64; a signature is `v1,` and the base64 HMAC-SHA256 of
// `id.timestamp.body`. The standardwebhooks package signs, so the service signs exactly as that
// package verifies on a receiver.

// Required at the first delivery, not at start (docs/PERFORMANCE.md, Memory).
const standardWebhooks = lazyRequire<{ Webhook: typeof Webhook }>('standardwebhooks')

export function newSecret (): string {
  return 'whsec_' + randomBytes(24).toString('base64')
}

/** The `webhook-signature` header: one signature per secret, space-separated (both during a rotation). */
export function signatures (secrets: string[], messageId: string, at: Date, body: string): string {
  const { Webhook } = standardWebhooks()
  return secrets.map((secret) => new Webhook(secret).sign(messageId, at, body)).join(' ')
}
