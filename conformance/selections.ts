/**
 * Which Tempest tests a run selects. Tests are named in Tempest's include-list form: one regular expression a
 * line, matched against test ids such as `tempest.api.compute.flavors.test_flavors.FlavorsV2TestJSON.
 * test_list_flavors[id-e36c0eaa-…,smoke]`. The interop guideline's tests are selected by idempotent id, which
 * stays the same when Tempest moves or renames a test.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

export const SERVICES = ['identity', 'compute', 'network', 'image', 'volume'] as const
export type Service = (typeof SERVICES)[number]

export const SELECTIONS = ['interop', 'ci', 'full'] as const
export type SelectionName = (typeof SELECTIONS)[number]

export interface InteropTest {
  name: string
  id: string
  capability: string
  flagged: boolean
}

const INTEROP_FILE = fileURLToPath(new URL('../../conformance/interop-2020.06-compute.txt', import.meta.url))

/** OpenStack Powered Compute 2020.06: the required capabilities' tests (tab-separated, `#` comments). */
export function interopTests(): InteropTest[] {
  return readFileSync(INTEROP_FILE, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const [name, id, capability, status] = line.split('\t')
      return { name, id: id.replace(/^id-/, ''), capability, flagged: status === 'flagged' }
    })
}

/** The API tests of a service (Tempest's own grouping: tempest.api.<service>). */
const apiTests = (service: Service) => `^tempest\\.api\\.${service}\\.`

/**
 * API tests the ci selection leaves to the full run, to keep CI's Tempest lane within its time budget on a
 * 2-core machine. Each line names why (the time it costs, measured).
 */
export const CI_EXCLUDED: { pattern: string; why: string }[] = []

export interface Selection {
  include: string[]
  exclude: string[]
}

/**
 * The tests of a selection, optionally narrowed to some services (while fixing one service, run only its tests).
 */
export function selection(name: SelectionName, services: readonly Service[] = SERVICES): Selection {
  const interop = interopTests()
    .filter((t) => services.some((s) => t.name.startsWith(`tempest.api.${s}.`)))
    .map((t) => t.id)
  const api = services.map(apiTests)
  if (name === 'interop') return { include: interop, exclude: [] }
  if (name === 'ci') return { include: [...interop, ...api], exclude: CI_EXCLUDED.map((e) => e.pattern) }
  return { include: api, exclude: [] }
}

/** The service a test id belongs to (`tempest.api.<service>.…`), or 'other'. */
export function serviceOf(testId: string): string {
  const match = /tempest\.api\.([a-z_]+)\./.exec(testId)
  return match ? match[1] : 'other'
}
