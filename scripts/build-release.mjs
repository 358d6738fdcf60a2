#!/usr/bin/env node
// Bundles pcctl into one file (dist/release/pcctl.mjs) that runs with only Node 20 installed, and publishes its
// SHA-256 next to it (sha256sum format). The control plane serves both, with install.sh, under /downloads.
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs'
import { build } from 'esbuild'

const version = JSON.parse(readFileSync('package.json', 'utf8')).version
mkdirSync('dist/release', { recursive: true })

// Libraries only some commands use go into the bundle as CommonJS source text, compiled on first use
// (src/cli/lazy.ts): a string costs next to nothing to load, a megabyte of code costs every start ~40 ms.
const lazyLibs = {}
for (const name of ['yaml', 'openpgp', 'tar-stream']) {
  const { outputFiles } = await build({
    stdin: { contents: `module.exports = require(${JSON.stringify(name)})`, resolveDir: '.' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    write: false,
    logLevel: 'warning',
  })
  lazyLibs[name] = outputFiles[0].text
}

await build({
  entryPoints: ['dist/src/cli/main.js'],
  outfile: 'dist/release/pcctl.mjs',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  logLevel: 'warning',
  define: { PCCTL_VERSION: JSON.stringify(version), PCCTL_LAZY_LIBS: JSON.stringify(lazyLibs) },
  // CommonJS dependencies bundled into ESM still call require for Node's built-ins.
  banner: { js: "import { createRequire as __pcctlRequire } from 'node:module'; const require = __pcctlRequire(import.meta.url);" },
})
chmodSync('dist/release/pcctl.mjs', 0o755)
const digest = createHash('sha256').update(readFileSync('dist/release/pcctl.mjs')).digest('hex')
writeFileSync('dist/release/pcctl.mjs.sha256', `${digest}  pcctl.mjs\n`)

// The host agent, bundled the same way: prep-node installs it on each host from /downloads/pcc-agent.
await build({
  entryPoints: ['dist/src/host/agent/main.js'],
  outfile: 'dist/release/pcc-agent.mjs',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  logLevel: 'warning',
  define: { PCC_AGENT_VERSION: JSON.stringify(version) },
  banner: { js: "import { createRequire as __pccRequire } from 'node:module'; const require = __pccRequire(import.meta.url);" },
})
chmodSync('dist/release/pcc-agent.mjs', 0o755)
const agentDigest = createHash('sha256').update(readFileSync('dist/release/pcc-agent.mjs')).digest('hex')
writeFileSync('dist/release/pcc-agent.mjs.sha256', `${agentDigest}  pcc-agent.mjs\n`)
