import { randomBytes } from 'node:crypto'
import { close, open as openFile, read as readFile } from 'node:fs'
import { copyFile, constants, mkdir, open, opendir, rename, rm, stat, unlink } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { assertKey, BLOB_KEY, type BlobRead, type BlobSource, type BlobStore, type StoredBlob } from './blob-store.js'

// The embedded default (`STORAGE_URL=file:data/files`): each blob a file named by its key, under
// two levels of folders from the key's first four hex digits (ab/cd/abcd…), so that no folder
// holds more than a few hundred entries. A put writes a temporary file beside the target,
// syncs it, renames it into place and syncs the folder: a crash leaves either no blob or the
// whole one (and at worst a temporary file, which the sweep's listing never names).

const TEMPORARY = '.partial-'

// A read of at most this many bytes whose size is known (a file's row holds it) is read whole
// into one buffer and sent as such: one open, one read, one close, not a stream's machinery
// (its reads, the read that finds the end, its events) for what one read brings. Thumbnails are
// a few KiB, medium variants some tens. (Node's callback API: one promise for the three calls.)
const SMALL_READ = 256 * 1024

function readSmall (path: string, position: number, length: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    openFile(path, 'r', (opening, fd) => {
      if (opening !== null) {
        if (opening.code === 'ENOENT') resolve(undefined)
        else reject(opening)
        return
      }
      const bytes = Buffer.allocUnsafe(length)
      readFile(fd, bytes, 0, length, position, (reading, count) => {
        close(fd, (closing) => {
          const failure = reading ?? closing
          if (failure !== null) reject(failure)
          else if (count !== length) reject(new Error(`${path}: ${count} bytes where ${length} were expected`))
          else resolve(bytes)
        })
      })
    })
  })
}

async function syncFolder (folder: string): Promise<void> {
  const handle = await open(folder, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

export class FolderStore implements BlobStore {
  readonly description: string
  readonly #root: string

  constructor (folder: string) {
    this.#root = resolve(folder)
    this.description = `file:${folder}`
  }

  #path (key: string): string {
    assertKey(key)
    return join(this.#root, key.slice(0, 2), key.slice(2, 4), key)
  }

  async put (key: string, source: BlobSource): Promise<void> {
    const path = this.#path(key)
    const size = typeof source === 'string' ? (await stat(source)).size : source.length
    if (await this.size(key) === size) return
    const folder = dirname(path)
    await mkdir(folder, { recursive: true })
    const temporary = join(folder, `${TEMPORARY}${randomBytes(6).toString('hex')}`)
    // A file is copied by the kernel (a reflink where the file system has them), never read into memory.
    if (typeof source === 'string') await copyFile(source, temporary, constants.COPYFILE_EXCL)
    const handle = await open(temporary, typeof source === 'string' ? 'r+' : 'wx', 0o644)
    try {
      if (typeof source !== 'string') await handle.writeFile(source)
      await handle.sync()
    } finally {
      await handle.close()
    }
    try {
      await rename(temporary, path)
    } catch (error) {
      await rm(temporary, { force: true })
      throw error
    }
    await syncFolder(folder)
  }

  async read (key: string, range?: { start: number, end: number }, size?: number): Promise<BlobRead | undefined> {
    // Opened first: a blob that is not there is known before anything is sent, and a removal
    // after the open cannot take the bytes from under the read.
    const path = this.#path(key)
    if (size !== undefined) {
      const length = range === undefined ? size : range.end - range.start + 1
      if (length <= SMALL_READ) {
        const body = await readSmall(path, range?.start ?? 0, length)
        return body === undefined ? undefined : { body, size }
      }
    }
    let handle
    try {
      handle = await open(path, 'r')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
    try {
      const held = (await handle.stat()).size
      // A file shorter than its row says fails here, before anything is sent: streamed, the
      // answer would end short of its Content-Length.
      const needed = range === undefined ? size : range.end + 1
      if (needed !== undefined && held < needed) throw new Error(`${path}: ${held} bytes where ${needed} were expected`)
      return { body: handle.createReadStream({ ...range, autoClose: true }), size: size ?? held }
    } catch (error) {
      await handle.close()
      throw error
    }
  }

  async size (key: string): Promise<number | undefined> {
    try {
      return (await stat(this.#path(key))).size
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
  }

  async remove (key: string): Promise<void> {
    try {
      await unlink(this.#path(key))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }

  async * list (): AsyncIterable<StoredBlob> {
    const walk = async function * (folder: string, depth: number): AsyncIterable<StoredBlob> {
      let entries
      try {
        entries = await opendir(folder)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
        throw error
      }
      for await (const entry of entries) {
        const path = join(folder, entry.name)
        if (depth < 2 && entry.isDirectory() && /^[0-9a-f]{2}$/.test(entry.name)) yield * walk(path, depth + 1)
        else if (depth === 2 && entry.isFile() && BLOB_KEY.test(entry.name)) {
          try {
            yield { key: entry.name, modified: (await stat(path)).mtime }
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
          }
        }
      }
    }
    yield * walk(this.#root, 0)
  }

  async close (): Promise<void> {}
}
