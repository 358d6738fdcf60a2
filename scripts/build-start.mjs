#!/usr/bin/env node
// What `npm start` compiles: the server, agent and CLI (src/, without the web console) into dist/src, file by file
// with esbuild — the same JavaScript tsc emits (ESM, ES2022 class fields, verbatim imports: esbuild reads
// tsconfig.json), without type checking, which `npm run typecheck` and `npm run build` (tsc over src, test, bench,
// conformance) do. On a 2-core machine tsc takes 30–50 s and esbuild under a second: the first start of a fresh
// clone waits for this (docs/benchmarks.md, "Fresh clone to a guest's console"). The pcctl and agent bundles and
// the web console are built after it as `npm run build` builds them.
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { build } from 'esbuild'

function sources(dir, wanted = (name) => name.endsWith('.ts') && !name.endsWith('.d.ts')) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return path === join('src', 'web') ? [] : sources(path, wanted)
    return wanted(entry.name) ? [path] : []
  })
}

// tsc's incremental state would take these files for its own: the next `npm run build` emits everything again.
rmSync('dist/.tsbuildinfo', { force: true })
await build({
  entryPoints: sources('src'),
  outdir: 'dist',
  outbase: '.',
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Node 20.10+ reads `with { type: 'json' }`; esbuild would drop it for node20.
  supported: { 'import-attributes': true },
  sourcemap: true,
  logLevel: 'warning',
})

// JSON the code imports (Glance's metadef namespaces) stays a file beside it, as tsc emits it.
for (const file of sources('src', (name) => name.endsWith('.json'))) {
  mkdirSync(dirname(join('dist', file)), { recursive: true })
  cpSync(file, join('dist', file))
}
