import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'

// Secrets the service must read back (TOTP secrets), kept encrypted at rest so that a copy of the
// database (a backup, a replica, a leaked dump) does not hold them in the clear.
//
// AES-256-GCM: authenticated, so a changed value is refused rather than decrypted to garbage. Each
// seal draws a fresh 12-byte IV (random IVs are safe for far more seals than this service makes
// with one key). The context (e.g. `totp:<userId>`) is the associated data: it is not stored, but
// it must be given again to open, so a sealed value copied to another row or purpose does not open.
//
// Format: `v1.` + base64url(iv) + `.` + base64url(ciphertext) + `.` + base64url(tag). The version
// lets a later format or key rotation tell old values from new ones.

const VERSION = 'v1'
const IV_BYTES = 12
const TAG_BYTES = 16

/** A sealed value that does not open: tampered with, truncated, another key or another context. */
export class SecretUnreadable extends Error {
  constructor (reason: string) {
    super(`sealed secret unreadable: ${reason}`)
    this.name = 'SecretUnreadable'
  }
}

/** Strict base64url: only the canonical spelling, since Buffer.from skips characters it does not know. */
function decodePart (text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64url')
  return bytes.toString('base64url') === text ? bytes : undefined
}

export class SecretBox {
  readonly #key: Buffer

  constructor (key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox: the key must be 32 bytes')
    // A copy, so that the caller's buffer changing later cannot change the key.
    this.#key = Buffer.from(key)
  }

  seal (plaintext: Buffer, context: string): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES })
    cipher.setAAD(Buffer.from(context, 'utf8'))
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()])
    const tag = cipher.getAuthTag()
    return [VERSION, iv.toString('base64url'), ciphertext.toString('base64url'), tag.toString('base64url')].join('.')
  }

  open (sealed: string, context: string): Buffer {
    const parts = sealed.split('.')
    if (parts.length !== 4 || parts[0] !== VERSION) throw new SecretUnreadable(`not a ${VERSION} value`)
    const [iv, ciphertext, tag] = parts.slice(1).map(decodePart)
    // The lengths are checked here: GCM would otherwise accept a shortened tag.
    if (iv?.length !== IV_BYTES || ciphertext === undefined || tag?.length !== TAG_BYTES) {
      throw new SecretUnreadable('malformed')
    }
    const decipher = createDecipheriv('aes-256-gcm', this.#key, iv, { authTagLength: TAG_BYTES })
    decipher.setAAD(Buffer.from(context, 'utf8'))
    decipher.setAuthTag(tag)
    try {
      return Buffer.concat([decipher.update(ciphertext), decipher.final()])
    } catch {
      throw new SecretUnreadable('authentication failed (changed, another key or another owner)')
    }
  }
}
