import { randomBytes } from 'node:crypto'
import { link, mkdir, open, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { sqliteFile } from '../db/database.js'

// The key of the SecretBox (secret-box.ts). SECRET_KEY when set. Otherwise, on the embedded
// SQLite database, a key generated on first use and kept in `secret.key` beside the database file,
// so that a single-host install works without configuration and its key travels with its data
// folder. (A backup of the database alone then holds the TOTP secrets only encrypted.) On
// PostgreSQL there is no such place: every instance must read the same key, so without SECRET_KEY
// there is none, and the features that need it answer 503 instead of each instance making its own.

export type SecretKeySource = { key: Buffer } | { unavailable: string }

/** A key file that exists but cannot be used; the message names the file (never its content). */
export class SecretKeyFileError extends Error {
  readonly file: string

  constructor (file: string, reason: string) {
    super(`${file}: ${reason}`)
    this.name = 'SecretKeyFileError'
    this.file = file
  }
}

const KEY_FILE = 'secret.key'
const KEY_TEXT = /^[0-9a-fA-F]{64}\n?$/

export async function loadSecretKey (config: { secretKey: Buffer | undefined, databaseUrl: string }): Promise<SecretKeySource> {
  if (config.secretKey !== undefined) return { key: config.secretKey }
  if (!config.databaseUrl.startsWith('file:')) {
    return { unavailable: 'SECRET_KEY is not set: on PostgreSQL every instance must share one key (64 hexadecimal characters)' }
  }
  // The same path rule as the database itself (db/database.ts). A `file:` URL is always a file on
  // disk there (there is no in-memory form), so the key always has a folder to live in.
  const file = join(dirname(sqliteFile(config.databaseUrl)), KEY_FILE)
  return { key: await readKeyFile(file) ?? await createKeyFile(file) }
}

/** The key in the file; undefined when there is no file. */
async function readKeyFile (file: string): Promise<Buffer | undefined> {
  let handle
  try {
    handle = await open(file, 'r')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  try {
    // Checked on the open file, so the file checked is the file read.
    const stats = await handle.stat()
    if (!stats.isFile()) throw new SecretKeyFileError(file, 'is not a regular file')
    // A key others can read (or replace) protects nothing; it is refused rather than quietly fixed,
    // since someone may have copied it already.
    if ((stats.mode & 0o077) !== 0) {
      throw new SecretKeyFileError(file, `is open to group or others (mode ${(stats.mode & 0o777).toString(8)}): chmod 600 it, and consider it leaked if others had access`)
    }
    const text = await handle.readFile('utf8')
    if (!KEY_TEXT.test(text)) throw new SecretKeyFileError(file, 'is not a key (64 hexadecimal characters and an optional newline)')
    return Buffer.from(text.slice(0, 64), 'hex')
  } finally {
    await handle.close()
  }
}

/**
 * Makes the key file, or reads the one another process made first. The key is written in full to
 * a temp file in the same folder, then hard-linked to the final name: link never replaces a file,
 * so of several processes starting at once exactly one wins, and the others (EEXIST) read its
 * key, which is complete since it was written before the link.
 */
async function createKeyFile (file: string): Promise<Buffer> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 })
  const key = randomBytes(32)
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  try {
    const handle = await open(temp, 'wx', 0o600)
    try {
      await handle.writeFile(`${key.toString('hex')}\n`)
      await handle.sync()
    } finally {
      await handle.close()
    }
    try {
      await link(temp, file)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const existing = await readKeyFile(file)
      if (existing === undefined) throw new SecretKeyFileError(file, 'disappeared while it was being created')
      return existing
    }
    await syncFolder(dirname(file))
    return key
  } finally {
    await rm(temp, { force: true })
  }
}

// The link itself made durable: a key lost in a crash would make every secret sealed with it unreadable.
async function syncFolder (folder: string): Promise<void> {
  try {
    const handle = await open(folder, 'r')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
  } catch {
    // Some platforms (Windows) cannot open or sync a folder; the file's content is synced already.
  }
}
