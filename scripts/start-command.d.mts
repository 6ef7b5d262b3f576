/** The arguments for `node` that start the service as `npm start` does (see start-command.mjs). */
export function serviceArguments (options?: { fromSource?: boolean }): string[]
