import { resolve } from 'node:path'

// `file:DIR` (relative to the working folder) and `file:///abs/dir` (the URL form), as
// BACKUP_URL and STORAGE_URL take them. `file://host/…` names a host and is refused.

export type FileUrlRefusal = 'host' | 'empty' | 'encoding'

/** The absolute folder a `file:` URL names, or why it names none. */
export function fileUrlFolder (raw: string): { dir: string } | { refused: FileUrlRefusal } {
  let dir = raw.slice('file:'.length)
  if (dir.startsWith('//')) {
    if (!dir.startsWith('///')) return { refused: 'host' }
    try {
      dir = decodeURIComponent(dir.slice(2))
    } catch {
      return { refused: 'encoding' }
    }
  }
  if (dir === '') return { refused: 'empty' }
  return { dir: resolve(dir) }
}
