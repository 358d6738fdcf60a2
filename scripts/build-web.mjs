#!/usr/bin/env node
// Builds the web console (src/web/) into dist/web/: one esbuild run bundles the app and the noVNC page into
// content-hashed files under assets/ (split so the terminal and VNC code load only when a console opens), the
// HTML pages get those names filled in, and every file is stored also gzip- and Brotli-compressed so the server
// sends compressed bytes without compressing per request. Decisions: docs/console.md.
import { brotliCompressSync, constants, gzipSync } from 'node:zlib'
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { basename, join, relative } from 'node:path'
import { build } from 'esbuild'

const SRC = 'src/web'
const FINAL = 'dist/web'
// Built beside dist/web and renamed into place at the end: two builds at once (two `npm start`, or a start and
// `npm run build`) never remove each other's files half-way, and a running server never serves a half-built tree.
const OUT = `${FINAL}.build-${process.pid}`
rmSync(OUT, { recursive: true, force: true })
mkdirSync(join(OUT, 'assets'), { recursive: true })

const { metafile } = await build({
  entryPoints: { app: `${SRC}/main.tsx`, vnc: `${SRC}/vnc/vnc-page.ts` },
  outdir: join(OUT, 'assets'),
  entryNames: '[name]-[hash]',
  chunkNames: 'chunk-[hash]',
  assetNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  // noVNC's ES modules use top-level await; ES2022 has it (current Chromium and Firefox).
  target: ['es2022', 'chrome120', 'firefox120'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
})

/** The built file of an entry point: its JS and the CSS esbuild emitted beside it. */
function entryFiles(name) {
  const [js] = Object.entries(metafile.outputs).filter(([, out]) => out.entryPoint && basename(out.entryPoint).startsWith(name === 'app' ? 'main.' : 'vnc-page.'))
  const out = js[1]
  return { js: basename(js[0]), css: out.cssBundle ? basename(out.cssBundle) : undefined }
}

function page(template, entry, prefix) {
  const files = entryFiles(entry)
  const css = files.css ? `<link rel="stylesheet" href="${prefix}assets/${files.css}">` : ''
  return readFileSync(join(SRC, template), 'utf8')
    .replace('<!--styles-->', css)
    .replace('<!--script-->', `<script type="module" src="${prefix}assets/${files.js}"></script>`)
}

writeFileSync(join(OUT, 'index.html'), page('index.html', 'app', ''))
mkdirSync(join(OUT, 'console'), { recursive: true })
writeFileSync(join(OUT, 'console/vnc.html'), page('vnc/vnc.html', 'vnc', '../'))

// Pre-compressed copies next to each file (skipped when compression does not pay).
function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : [path]
  })
}
let total = 0
let totalBr = 0
for (const path of files(OUT)) {
  const data = readFileSync(path)
  const br = brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: data.length } })
  const gz = gzipSync(data, { level: 9 })
  if (br.length < data.length * 0.9) writeFileSync(`${path}.br`, br)
  if (gz.length < data.length * 0.9) writeFileSync(`${path}.gz`, gz)
  total += data.length
  totalBr += Math.min(br.length, data.length)
  if (process.env.PCC_WEB_BUILD_SIZES) console.log(`${relative(OUT, path).padEnd(40)} ${String(data.length).padStart(8)} ${String(br.length).padStart(8)} br`)
}
if (process.env.PCC_WEB_BUILD_SIZES) console.log(`total ${total} bytes, ${totalBr} Brotli-compressed`)

/** Swaps the finished tree in: the old one is moved aside first (a rename cannot replace a non-empty directory). */
function publish() {
  const old = `${FINAL}.old-${process.pid}`
  for (;;) {
    rmSync(old, { recursive: true, force: true })
    try {
      renameSync(FINAL, old)
    } catch (err) {
      if (err.code !== 'ENOENT') throw err
    }
    try {
      renameSync(OUT, FINAL)
      break
    } catch (err) {
      // Another build published between our two renames: move its tree aside too and try again.
      if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err
    }
  }
  rmSync(old, { recursive: true, force: true })
}
publish()
