import { join } from 'node:path'
import { serviceArguments } from '../scripts/start-command.mjs'

// How the tests start the service's own processes: the server, `npm run restore`, `npm run
// cluster`. `npm test` (scripts/test.mjs) builds dist/ from this checkout before its passes and
// says so with TEST_SERVICE_BUILT=1: the tests then run the built JavaScript, as `npm start` and
// `npm run restore` do. Run any other way (one file under `node --test`), they run the
// TypeScript sources through tsx, which compiles every module again in every process it starts.

const ROOT = join(import.meta.dirname, '..')

/** Whether dist/ was built from this checkout for this run. */
export const serviceBuilt = process.env.TEST_SERVICE_BUILT === '1'

/** node's arguments that start the server as `npm start` does (its Node.js flags included). */
export function serverArguments (): string[] {
  return serviceArguments({ fromSource: !serviceBuilt })
}

/** node's arguments that run `npm run restore` with these options. */
export function restoreArguments (options: string[]): string[] {
  return serviceBuilt
    ? [join(ROOT, 'dist/cli/restore.js'), ...options]
    : ['--import', 'tsx', join(ROOT, 'src/cli/restore.ts'), ...options]
}

/** scripts/cluster.mjs's flag: start dist/ as it is, or the sources through tsx. */
export const clusterBuildFlag = serviceBuilt ? '--no-build' : '--dev'
