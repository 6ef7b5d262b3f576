import { useRef, useState } from 'preact/hooks'
import { nextCursor, problemOf, type Problem } from './api.js'

/** What the generated client answers for a list operation. */
export interface ListAnswer<T> {
  data?: T[] | undefined
  error?: unknown
  response?: Response | undefined
}

export interface Pages<T, F> {
  items: T[]
  /** For a screen that adds items the stream brought (a live order). */
  setItems: (change: (items: T[]) => T[]) => void
  problem: Problem | undefined
  loading: boolean
  /** Whether the list has a next page (its answer's Link rel="next"). */
  more: boolean
  /** The filter of the pages shown (read by a stream's listener, which outlives a render). */
  filter: { readonly current: F }
  /** Reads the first page for `filter` (a new search, or the same one read again). */
  first: (filter: F) => Promise<void>
  /** Appends the next page of the same filter. */
  next: () => Promise<void>
}

/**
 * A keyset-paged list of the API: the first page for a filter, then the next one appended at a
 * time by the answer's cursor. An answer that arrives after a newer first page was asked for is
 * dropped, so a slow search cannot overwrite a later one. `firstPage` decides what a first page
 * read again keeps of the items shown (by default, nothing).
 */
export function usePages<T, F> (
  read: (filter: F, cursor: string | undefined) => Promise<ListAnswer<T>>,
  initial: F,
  firstPage: (shown: T[], page: T[]) => T[] = (_shown, page) => page
): Pages<T, F> {
  const [items, setItems] = useState<T[]>([])
  const [cursor, setCursor] = useState<string | undefined>(undefined)
  const [problem, setProblem] = useState<Problem | undefined>(undefined)
  const [loading, setLoading] = useState(true)
  const filter = useRef(initial)
  const asked = useRef(0)

  async function load (wanted: F, after: string | undefined): Promise<void> {
    const mine = after === undefined ? ++asked.current : asked.current
    filter.current = wanted
    setLoading(true)
    setProblem(undefined)
    const { data, error, response } = await read(wanted, after).catch((): ListAnswer<T> => ({}))
    if (mine !== asked.current) return
    setLoading(false)
    if (data === undefined || response === undefined) { setProblem(problemOf(error, response)); return }
    setItems((shown) => after === undefined ? firstPage(shown, data) : [...shown, ...data])
    setCursor(nextCursor(response))
  }

  return {
    items,
    setItems,
    problem,
    loading,
    more: cursor !== undefined,
    filter,
    first: async (wanted) => { await load(wanted, undefined) },
    next: async () => { if (!loading && cursor !== undefined) await load(filter.current, cursor) }
  }
}
