/**
 * Libraries only some pcctl commands need — YAML (-f yaml, clouds.yaml), OpenPGP and tar (support bundles) —
 * loaded the first time they are used. pcctl is started once per command of a script, and compiling these at
 * every start cost more than a whole `server list` spends talking to the API (docs/cli.md, "Start-up time").
 *
 * Unbundled (dist/), Node's require loads them from node_modules. In the release bundle, which must stay one
 * file, scripts/build-release.mjs embeds each as CommonJS source text in PCCTL_LAZY_LIBS; scanning a string is
 * nearly free, and the text is compiled here only when a command asks for the library.
 */
import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runInThisContext } from 'node:vm'

/** Set by scripts/build-release.mjs in the bundle: the CommonJS source of each lazy library. */
declare const PCCTL_LAZY_LIBS: Record<string, string> | undefined

type LazyLibraries = {
  yaml: typeof import('yaml')
  openpgp: typeof import('openpgp')
  'tar-stream': typeof import('tar-stream')
}

const requireFromHere = createRequire(import.meta.url)
const loaded = new Map<string, unknown>()

/** Runs CommonJS source as Node's module wrapper does (module, exports, require, __filename, __dirname). */
function evaluate(name: string, source: string): unknown {
  const module = { exports: {} as unknown }
  const filename = fileURLToPath(import.meta.url)
  const factory = runInThisContext(`(function (module, exports, require, __filename, __dirname) {${source}\n})`, { filename: `pcctl-lazy-${name}.cjs` })
  ;(factory as (...args: unknown[]) => void)(module, module.exports, requireFromHere, filename, dirname(filename))
  return module.exports
}

export function lazy<K extends keyof LazyLibraries>(name: K): LazyLibraries[K] {
  if (!loaded.has(name)) {
    const embedded = typeof PCCTL_LAZY_LIBS === 'object' ? PCCTL_LAZY_LIBS[name] : undefined
    loaded.set(name, embedded === undefined ? requireFromHere(name) : evaluate(name, embedded))
  }
  return loaded.get(name) as LazyLibraries[K]
}
