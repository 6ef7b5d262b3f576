/** The Node.js flags and entry point of package.json's start script (see start-command.mjs). */
export function startCommand (root: string): { flags: string[], entry: string }
