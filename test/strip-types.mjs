// Loaded into each test file's process by `npm test` (scripts/test.mjs): the TypeScript sources
// run on Node.js's own type stripping, with this one resolve hook beside it. The sources import
// each other by the names the compiler emits (`./app.js` for app.ts, as NodeNext asks); here
// such a name is taken to the `.ts` file beside it when no `.js` file is there. Nothing is
// compiled: the types are blanked out in place (so lines and columns stay as written), which the
// compiler's `erasableSyntaxOnly` guarantees is all the sources need.
//
// Why not tsx, which the scripts and the service's source runs still use: tsx transforms every
// file with esbuild and resolves every import through hooks on another thread; a test file's
// process spent about 1 s of CPU on that, of about 3 s in all, two hundred times a pass. With
// this and V8's compile cache (NODE_COMPILE_CACHE, set by scripts/test.mjs) it is about 2 s.
import { existsSync } from 'node:fs'
import { registerHooks } from 'node:module'
import { URL, fileURLToPath } from 'node:url'

registerHooks({
  resolve (specifier, context, nextResolve) {
    const parent = context.parentURL
    if (specifier.endsWith('.js') && (specifier.startsWith('./') || specifier.startsWith('../')) &&
      parent !== undefined && parent.startsWith('file:') && !parent.includes('/node_modules/')) {
      const asJs = new URL(specifier, parent)
      const asTs = new URL(specifier.slice(0, -3) + '.ts', parent)
      if (!existsSync(fileURLToPath(asJs)) && existsSync(fileURLToPath(asTs))) return nextResolve(asTs.href, context)
    }
    return nextResolve(specifier, context)
  }
})
