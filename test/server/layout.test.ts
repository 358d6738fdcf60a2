/**
 * The tree is laid out by where code runs (docs/architecture.md, "Where code runs"): these tests read the real
 * imports of src/ (TypeScript's own resolver, type-only imports included) and fail when an arrow runs the wrong way.
 * ESLint's no-restricted-imports (eslint.config.js) says the same at each import; this checks the whole graph,
 * including what pcc-agent's bundle reaches through other folders.
 */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import ts from 'typescript'

const ROOT = process.cwd()
const SRC = join(ROOT, 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === 'web' && dir === SRC ? [] : sourceFiles(path)
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** Every file of src/ (relative to the repository) → the src/ files it imports. */
function importGraph(): Map<string, string[]> {
  const options: ts.CompilerOptions = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext }
  const graph = new Map<string, string[]>()
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true)
    const targets = importedFiles
      .map((imported) => ts.resolveModuleName(imported.fileName, file, options, ts.sys).resolvedModule?.resolvedFileName)
      .filter((target): target is string => !!target && resolve(target).startsWith(SRC + '/'))
    graph.set(relative(ROOT, file), targets.map((target) => relative(ROOT, target)))
  }
  return graph
}

const graph = importGraph()

/** Import arrows from files under `from` to files under `to`, except from the folders in `except`. */
function arrows(from: string, to: string[], except: string[] = []): string[] {
  const found: string[] = []
  for (const [file, targets] of graph) {
    if (!file.startsWith(from) || except.some((folder) => file.startsWith(folder))) continue
    for (const target of targets) if (to.some((folder) => target.startsWith(folder))) found.push(`${file} → ${target}`)
  }
  return found
}

describe('source layout by where code runs', () => {
  it('reads a graph of the whole tree', () => {
    assert.ok(graph.size > 300, `only ${graph.size} files found under src/`)
    assert.ok(graph.get('src/host/agent/main.ts')?.includes('src/host/agent/agent.ts'), 'the resolver does not follow imports')
  })

  it('contracts import nothing outside src/contracts', () => {
    assert.deepEqual(arrows('src/contracts/', ['src/server/', 'src/host/', 'src/lib/', 'src/cli/', 'src/client/', 'src/testkit/']), [])
  })

  it('lib imports only contracts', () => {
    assert.deepEqual(arrows('src/lib/', ['src/server/', 'src/host/', 'src/cli/', 'src/client/', 'src/testkit/']), [])
  })

  it('host code never imports the control plane', () => {
    assert.deepEqual(arrows('src/host/', ['src/server/', 'src/cli/', 'src/client/']), [])
  })

  it('the control plane reaches host code only through its all-in-one module', () => {
    assert.deepEqual(arrows('src/server/', ['src/host/'], ['src/server/all-in-one/']), [])
    assert.notDeepEqual(arrows('src/server/all-in-one/', ['src/host/']), [], 'the all-in-one module runs host code')
  })

  it("pcc-agent's bundle reaches only host, contracts and lib", () => {
    const reached = new Set<string>()
    const pending = ['src/host/agent/main.ts']
    for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
      if (reached.has(file)) continue
      reached.add(file)
      pending.push(...(graph.get(file) ?? []))
    }
    const outside = [...reached].filter((file) => !/^src\/(host|contracts|lib)\//.test(file))
    assert.deepEqual(outside, [])
    assert.ok(reached.size > 30, `the agent reaches only ${reached.size} files`)
  })
})
