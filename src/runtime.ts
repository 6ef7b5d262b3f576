// Imported first by every entry point, before the SQLite driver loads: the driver's binary needs
// Node-API 10 (Node.js 22.14 or newer, every 24), and on an older Node.js it crashes the process
// with a segmentation fault instead of an error. Say so plainly instead.
const REQUIRED_NODE_API = 10

if (Number(process.versions.napi ?? 0) < REQUIRED_NODE_API) {
  process.stderr.write(`Node.js ${process.version} is too old: this service needs Node.js 24, or 22.14 or newer (Node-API ${REQUIRED_NODE_API}).\n`)
  process.exit(1)
}
