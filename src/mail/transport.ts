import { randomBytes } from 'node:crypto'
import { mkdir, rename, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Transporter } from 'nodemailer'
import type { MailConfig } from '../config/config.js'
import { lazyRequire } from '../lazy-require.js'

// How a composed mail leaves the service: over SMTP when SMTP_URL is set (nodemailer, a small
// pool of connections; STARTTLS when the server offers it, smtps:// for TLS from the first
// byte), else as an RFC 5322 .eml file in MAIL_DIR, so that the embedded default needs nothing
// else and a person can open the mail. Either way nodemailer builds the message (both parts,
// Date, Message-ID, encodings).

export interface OutgoingMail {
  to: string
  subject: string
  text: string
  html: string
  messageId: string
}

export interface MailTransport {
  /** Sends the mail; resolves with where it went (the .eml file's path, or the server's answer). */
  send: (mail: OutgoingMail) => Promise<string>
  close: () => void
}

// nodemailer (about 5 MiB of heap) is loaded with the first mail, not by every instance at start:
// most instances of a cluster send none for hours.
const nodemailer = lazyRequire<typeof import('nodemailer')>('nodemailer')

// Bounds on a slow or silent server: an attempt fails (and is retried later) instead of
// holding a sending slot for good.
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

export function mailTransport (config: MailConfig): MailTransport {
  const message = (mail: OutgoingMail) => ({ from: config.from, to: mail.to, subject: mail.subject, text: mail.text, html: mail.html, messageId: mail.messageId, date: new Date() })
  if (config.smtpUrl !== undefined) {
    const options = { url: config.smtpUrl, pool: true, maxConnections: 4, ...SMTP_TIMEOUTS }
    let smtp: Transporter | undefined
    return {
      send: async (mail) => {
        smtp ??= nodemailer().createTransport(options)
        const info = await smtp.sendMail(message(mail))
        return String(info.response)
      },
      close: () => { smtp?.close() }
    }
  }
  let files: Transporter | undefined
  const dir = resolve(config.dir)
  let made: Promise<unknown> | undefined
  return {
    send: async (mail) => {
      // The folder is private (0700) and so are the files (0600): a mail carries a token.
      made ??= mkdir(dir, { recursive: true, mode: 0o700 })
      await made
      files ??= nodemailer().createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
      const info = await files.sendMail(message(mail))
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomBytes(4).toString('hex')}.eml`
      const path = join(dir, name)
      // Written whole, then renamed: a reader never sees half a mail.
      await writeFile(`${path}.tmp`, info.message as Buffer, { mode: 0o600 })
      await rename(`${path}.tmp`, path)
      return path
    },
    close: () => { files?.close() }
  }
}
