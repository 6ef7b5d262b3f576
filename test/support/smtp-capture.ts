import type { Socket } from 'node:net'
import { simpleParser, type AddressObject } from 'mailparser'
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server'

// A real SMTP server on loopback that keeps every mail it accepts, so that tests see exactly
// what a mail relay would: the envelope, the headers, both parts. It can be slowed down, taken
// down and brought back on the same port, to test how the sender copes.

export interface CapturedMail {
  /** The envelope recipients (RCPT TO), lower-cased. */
  to: string[]
  /** The From header as mailparser renders it; the envelope sender when there is none. */
  from: string
  /** The envelope sender (MAIL FROM). */
  envelopeFrom: string
  subject: string
  text: string
  html: string
  headers: Map<string, unknown>
  messageId: string | undefined
  date: Date | undefined
  raw: string
  auth: { username: string, password: string } | undefined
  /** Date.now() when the DATA was in, before any delay; the mail joins `mails` once answered. */
  receivedAt: number
}

export interface SmtpCaptureOptions {
  port?: number
  delayMs?: number
  /** '' (with password '') accepts mail without AUTH. */
  user?: string
  password?: string
}

interface Waiter { predicate: (mail: CapturedMail) => boolean, resolve: (mail: CapturedMail) => void }

const addressText = (value: AddressObject | AddressObject[] | undefined): string | undefined =>
  value === undefined ? undefined : Array.isArray(value) ? value.map((a) => a.text).join(', ') : value.text

export class SmtpCapture {
  readonly mails: CapturedMail[] = []
  /** Each mail's DATA is answered only after this many milliseconds. */
  delayMs: number
  readonly #user: string
  readonly #password: string
  #port: number
  #server: SMTPServer | undefined
  readonly #sockets = new Set<Socket>()
  readonly #auth = new Map<string, { username: string, password: string }>()
  readonly #delays = new Set<NodeJS.Timeout>()
  readonly #waiters = new Set<Waiter>()
  readonly #handedOut = new Set<CapturedMail>()

  private constructor (options: SmtpCaptureOptions) {
    this.#port = options.port ?? 0
    this.delayMs = options.delayMs ?? 0
    this.#user = options.user ?? 'mailer'
    this.#password = options.password ?? 'secret'
  }

  static async start (options: SmtpCaptureOptions = {}): Promise<SmtpCapture> {
    const capture = new SmtpCapture(options)
    await capture.#listen()
    return capture
  }

  /** Mails received whose answer is being held back (delayMs): in the server's hands, not yet accepted. */
  get holding (): number {
    return this.#delays.size
  }

  /**
   * The next mail to the address with the subject that no earlier call returned: each mail is
   * handed out once, so a test reads the mail its own request caused even when the address got
   * others of the same subject before.
   */
  async next (address: string, subject: string, timeoutMs = 15_000): Promise<CapturedMail> {
    const mail = await this.waitFor((m) => !this.#handedOut.has(m) && m.to.includes(address.toLowerCase()) && m.subject === subject, timeoutMs)
    this.#handedOut.add(mail)
    return mail
  }

  get port (): number {
    return this.#port
  }

  get url (): string {
    const credentials = this.#requiresAuth
      ? `${encodeURIComponent(this.#user)}:${encodeURIComponent(this.#password)}@`
      : ''
    return `smtp://${credentials}127.0.0.1:${this.#port}`
  }

  get #requiresAuth (): boolean {
    return this.#user !== '' || this.#password !== ''
  }

  async waitFor (predicate: (mail: CapturedMail) => boolean, timeoutMs = 10_000): Promise<CapturedMail> {
    const found = this.mails.find(predicate)
    if (found !== undefined) return found
    return await new Promise<CapturedMail>((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve: (mail) => {
          clearTimeout(timer)
          this.#waiters.delete(waiter)
          resolve(mail)
        }
      }
      const timer = setTimeout(() => {
        this.#waiters.delete(waiter)
        reject(new Error(`no matching mail within ${timeoutMs} ms; captured ${this.#summary()}`))
      }, timeoutMs)
      this.#waiters.add(waiter)
    })
  }

  async waitForCount (count: number, timeoutMs = 10_000): Promise<CapturedMail[]> {
    if (this.mails.length >= count) return this.mails.slice(0, count)
    try {
      await this.waitFor(() => this.mails.length >= count, timeoutMs)
    } catch {
      throw new Error(`expected ${count} mails within ${timeoutMs} ms; captured ${this.#summary()}`)
    }
    return this.mails.slice(0, count)
  }

  /** Takes the server down at once: open connections are cut, new ones refused. */
  async stop (): Promise<void> {
    const server = this.#server
    if (server === undefined) return
    this.#server = undefined
    // A delayed answer would go to a connection that no longer exists.
    for (const timer of this.#delays) clearTimeout(timer)
    this.#delays.clear()
    const closed = new Promise<void>((resolve) => server.server.close(() => resolve()))
    for (const socket of this.#sockets) socket.destroy()
    this.#sockets.clear()
    await closed
  }

  /** Listens again on the same port; the mails captured so far are kept. */
  async restart (): Promise<void> {
    if (this.#server !== undefined) return
    await this.#listen()
  }

  #summary (): string {
    if (this.mails.length === 0) return 'no mails'
    return `${this.mails.length} mail(s): ` +
      this.mails.map((m) => `${JSON.stringify(m.subject)} to ${m.to.join(', ')}`).join('; ')
  }

  async #listen (): Promise<void> {
    const server = new SMTPServer({
      secure: false,
      disabledCommands: ['STARTTLS'],
      authOptional: !this.#requiresAuth,
      allowInsecureAuth: true,
      authMethods: ['PLAIN', 'LOGIN'],
      logger: false,
      size: 10 * 1024 * 1024,
      onAuth: (auth, session, callback) => {
        if (auth.username === this.#user && auth.password === this.#password) {
          this.#auth.set(session.id, { username: auth.username, password: auth.password })
          callback(null, { user: auth.username })
        } else {
          callback(Object.assign(new Error('Authentication credentials invalid'), { responseCode: 535 }))
        }
      },
      onData: (stream, session, callback) => {
        this.#receive(stream, session).then((mail) => {
          const accept = () => {
            this.mails.push(mail)
            callback(null, `queued as ${this.mails.length}`)
            for (const waiter of [...this.#waiters]) {
              if (waiter.predicate(mail)) waiter.resolve(mail)
            }
          }
          if (this.delayMs <= 0) return accept()
          const timer = setTimeout(() => {
            this.#delays.delete(timer)
            accept()
          }, this.delayMs)
          this.#delays.add(timer)
        }, (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))))
      },
      onClose: (session) => {
        this.#auth.delete(session.id)
      }
    })
    server.server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket)
      socket.once('close', () => this.#sockets.delete(socket))
    })
    // A client cut off by stop() must not surface as an unhandled 'error' event.
    server.on('error', () => {})
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err)
      server.server.once('error', onError)
      server.listen(this.#port, '127.0.0.1', () => {
        server.server.off('error', onError)
        resolve()
      })
    })
    const address = server.server.address()
    if (address === null || typeof address === 'string') throw new Error('SMTP capture: no TCP address')
    this.#port = address.port
    this.#server = server
  }

  async #receive (stream: SMTPServerDataStream, session: SMTPServerSession): Promise<CapturedMail> {
    const chunks: Buffer[] = []
    for await (const chunk of stream) chunks.push(chunk as Buffer)
    if (stream.sizeExceeded) throw Object.assign(new Error('Message exceeds the size limit'), { responseCode: 552 })
    const raw = Buffer.concat(chunks)
    const parsed = await simpleParser(raw)
    const envelopeFrom = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address
    return {
      to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
      from: addressText(parsed.from) ?? envelopeFrom,
      envelopeFrom,
      subject: parsed.subject ?? '',
      text: parsed.text ?? '',
      html: typeof parsed.html === 'string' ? parsed.html : '',
      headers: parsed.headers,
      messageId: parsed.messageId,
      date: parsed.date,
      raw: raw.toString('utf8'),
      auth: this.#auth.get(session.id),
      receivedAt: Date.now()
    }
  }
}

/**
 * The first http(s) link in the text part: the first one on a line of its own, where the
 * templates put it, so that a link typed into a name cannot be mistaken for it.
 */
export function linkIn (mail: CapturedMail): URL {
  const lines = mail.text.split(/\r?\n/).map((line) => line.trim())
  const own = lines.find((line) => /^https?:\/\/\S+$/.test(line))
  const any = own ?? /https?:\/\/[^\s<>"]+/.exec(mail.text)?.[0]
  if (any === undefined) throw new Error(`no link in the mail ${JSON.stringify(mail.subject)}:\n${mail.text}`)
  return new URL(any)
}

/** The `token` query parameter of the mail's link. */
export function tokenIn (mail: CapturedMail): string {
  const url = linkIn(mail)
  const token = url.searchParams.get('token')
  if (token === null || token === '') throw new Error(`no token in the link ${url.href} of the mail ${JSON.stringify(mail.subject)}`)
  return token
}
