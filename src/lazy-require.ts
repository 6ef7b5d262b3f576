import { createRequire } from 'node:module'

// A package that most processes never use is required the first time it is needed, not at
// start (docs/PERFORMANCE.md, Memory). Required, not imported: the packages loaded this way are
// CommonJS, a require is synchronous where the first use is (opening a database), and through
// import() a package's own require of a builtin such as node:https becomes an ES module import
// of it, whose namespace loads the runtime's bundled undici (pipeline/client-error.ts says why).
const require = createRequire(import.meta.url)

/** The package `name`, required at the first call and the same module at every later one. */
export function lazyRequire<T> (name: string): () => T {
  let loaded: T | undefined
  return () => {
    loaded ??= require(name) as T
    return loaded
  }
}
