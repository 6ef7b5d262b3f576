// Reads back a QR code drawn as SVG by the `qrcode` package, without a browser: the SVG is parsed
// into its module matrix, painted into an RGBA bitmap and handed to jsQR.
//
// qrcode's SVG renderer (lib/renderer/svg-tag.js) emits
//   <svg xmlns=… [width=… height=…] viewBox="0 0 S S" shape-rendering="crispEdges">
//     <path fill="#ffffff" d="M0 0hSvSH0z"/>              (background; absent if light is transparent)
//     <path stroke="#000000" d="M4 4.5h7m2 0h1…M4 5.5h1…"/> (dark modules)
//   </svg>
// where S is the module count plus twice the margin (the quiet zone, 4 by default). Every run of
// dark modules in a row is one stroke of width 1 along y = row + 0.5: a row's first run starts
// with an absolute M x y, later runs in the row with a relative m dx 0, and h n draws n modules.
import jsQRModule from 'jsqr'

type JsQR = typeof import('jsqr').default
// jsqr is a CommonJS bundle whose module.exports is the function (with .default pointing at
// itself), while its typings declare an ES default export; accept either shape.
const jsQR: JsQR = (jsQRModule as unknown as { default?: JsQR }).default ?? (jsQRModule as unknown as JsQR)

const PIXELS_PER_MODULE = 6
const QUIET_ZONE = 4

function attribute(tag: string, name: string): string | undefined {
  return new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1]
}

/** The module matrix (true = dark) of the SVG, margin included. */
export function svgToMatrix(svg: string): boolean[][] {
  const svgTag = /<svg\b[^>]*>/.exec(svg)?.[0]
  if (!svgTag) throw new Error('not an SVG: no <svg> element')
  const viewBox = attribute(svgTag, 'viewBox')?.trim().split(/[\s,]+/).map(Number)
  if (!viewBox || viewBox.length !== 4 || viewBox.some((n) => !Number.isFinite(n))) {
    throw new Error('QR SVG has no usable viewBox')
  }
  const [minX, minY, width, height] = viewBox as [number, number, number, number]
  if (minX !== 0 || minY !== 0 || width !== height || !Number.isInteger(width) || width <= 0) {
    throw new Error(`unexpected QR SVG viewBox ${viewBox.join(' ')}`)
  }
  const size = width

  const darkPaths = [...svg.matchAll(/<path\b[^>]*>/g)].map((m) => m[0]).filter((tag) => attribute(tag, 'stroke') !== undefined)
  if (darkPaths.length !== 1) throw new Error(`expected one stroked <path> of dark modules, found ${darkPaths.length}`)
  const d = attribute(darkPaths[0]!, 'd')
  if (d === undefined) throw new Error('the dark-module <path> has no d attribute')

  const matrix = Array.from({ length: size }, () => new Array<boolean>(size).fill(false))
  let x = 0
  let y = 0
  const command = /\s*([MmHh])\s*(-?[\d.]+)(?:[\s,]+(-?[\d.]+))?/y
  while (command.lastIndex < d.trimEnd().length) {
    const at = command.lastIndex
    const match = command.exec(d)
    if (!match) throw new Error(`unexpected QR path data at ${JSON.stringify(d.slice(at, at + 12))}`)
    const [, cmd, a, b] = match
    const first = Number(a)
    const second = b === undefined ? undefined : Number(b)
    if (cmd === 'M' || cmd === 'm') {
      if (second === undefined) throw new Error(`${cmd} needs two coordinates in QR path`)
      x = cmd === 'M' ? first : x + first
      y = cmd === 'M' ? second : y + second
      continue
    }
    if (second !== undefined) throw new Error(`${cmd} takes one coordinate in QR path`)
    const end = cmd === 'h' ? x + first : first
    const row = y - 0.5
    const from = Math.min(x, end)
    const to = Math.max(x, end)
    if (!Number.isInteger(row) || row < 0 || row >= size || !Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to > size) {
      throw new Error(`QR path stroke off the module grid: x ${from}..${to}, y ${y}`)
    }
    for (let col = from; col < to; col++) matrix[row]![col] = true
    x = end
  }
  return matrix
}

/** Paints the matrix black on white, with an extra white quiet zone, as RGBA. */
function render(matrix: boolean[][]): { data: Uint8ClampedArray; width: number; height: number } {
  const modules = matrix.length + 2 * QUIET_ZONE
  const width = modules * PIXELS_PER_MODULE
  const data = new Uint8ClampedArray(width * width * 4).fill(255)
  matrix.forEach((cells, row) => {
    cells.forEach((dark, col) => {
      if (!dark) return
      const top = (row + QUIET_ZONE) * PIXELS_PER_MODULE
      const left = (col + QUIET_ZONE) * PIXELS_PER_MODULE
      for (let py = top; py < top + PIXELS_PER_MODULE; py++) {
        for (let px = left; px < left + PIXELS_PER_MODULE; px++) {
          const i = (py * width + px) * 4
          data[i] = data[i + 1] = data[i + 2] = 0
        }
      }
    })
  })
  return { data, width, height: width }
}

/** The text of a QR code drawn as SVG by `qrcode`; throws if no QR code can be read from it. */
export function decodeQrSvg(svg: string): string {
  const { data, width, height } = render(svgToMatrix(svg))
  const result = jsQR(data, width, height, { inversionAttempts: 'dontInvert' })
  if (!result) throw new Error('no QR code found in the SVG')
  return result.data
}
