import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The operator's console (docs/console.md): a single-page app built into dist/public/console,
// which the service serves at /console/ (src/console/console.plugin.ts). Preact's JSX through
// Vite's own transform, no plugin; no inline script or style in the output (the page's CSP
// allows only the service's own files), no module-preload polyfill (it would be inline).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/public/console', import.meta.url)),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: 'es2022',
    reportCompressedSize: true
  }
})
