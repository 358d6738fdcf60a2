/**
 * The outcome of a Tempest run, read from stestr's record of it (a subunit stream), and the verdict on it:
 * counts per service, the failures, and the skips with Tempest's reasons.
 */
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { serviceOf, type InteropTest } from './selections.js'

export type Status = 'success' | 'fail' | 'skip' | 'xfail' | 'uxsuccess' | 'exists' | 'inprogress' | 'not run'

export interface TestResult {
  id: string
  status: Status
  reason: string
}

const READER = fileURLToPath(new URL('../../conformance/subunit-results.py', import.meta.url))

/** Every test of the workspace's last run. */
export function readResults(workspace: string): TestResult[] {
  const stream = spawnSync('stestr', ['last', '--subunit'], { cwd: workspace, maxBuffer: 1 << 30 })
  if (stream.status !== 0) throw new Error(`stestr last: ${stream.stderr.toString()}`)
  const parsed = spawnSync('/usr/bin/python3', [READER], { input: stream.stdout, maxBuffer: 1 << 28 })
  if (parsed.status !== 0) throw new Error(`reading the subunit stream: ${parsed.stderr.toString()}`)
  return parsed.stdout
    .toString()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as TestResult)
}

/** Class-level outcomes: `setUpClass (tempest.api….ClassName)` stands for every test of the class. */
function classOutcomes(results: TestResult[]): Map<string, TestResult> {
  const byClass = new Map<string, TestResult>()
  for (const r of results) {
    const match = /^(?:setUpClass|tearDownClass) \((.+)\)$/.exec(r.id)
    if (match && r.status !== 'success') byClass.set(match[1], r)
  }
  return byClass
}

/** Whether a result counts as passed, failed or skipped. */
export function outcome(status: Status): 'passed' | 'failed' | 'skipped' {
  if (status === 'success' || status === 'xfail') return 'passed'
  if (status === 'skip') return 'skipped'
  return 'failed'
}

/**
 * The interop guideline's tests, each with its result: found by idempotent id, else through its class's
 * setUpClass (a class skipped or failed before its tests ran), else `not run` (a failure: the test is missing).
 */
export function interopResults(tests: InteropTest[], results: TestResult[]): (InteropTest & TestResult)[] {
  const classes = classOutcomes(results)
  return tests.map((t) => {
    const found = results.find((r) => r.id.includes(`id-${t.id}`))
    if (found) return { ...t, ...found, id: t.id }
    const cls = classes.get(t.name.slice(0, t.name.lastIndexOf('.')))
    if (cls) return { ...t, id: t.id, status: cls.status, reason: cls.reason }
    return { ...t, id: t.id, status: 'not run', reason: 'no result for this test in the run' }
  })
}

export interface Counts {
  passed: number
  failed: number
  skipped: number
}

/** Counts per service; class-level entries count once for their class. */
export function countByService(results: { id: string; status: Status }[], serviceOfResult: (r: { id: string }) => string = (r) => serviceOf(r.id)): Map<string, Counts> {
  const counts = new Map<string, Counts>()
  for (const r of results) {
    const service = serviceOfResult(r)
    if (!counts.has(service)) counts.set(service, { passed: 0, failed: 0, skipped: 0 })
    counts.get(service)![outcome(r.status)]++
  }
  return counts
}

/** Skip reasons with how many tests each skipped, most frequent first. */
export function skipReasons(results: { status: Status; reason: string }[]): [string, number][] {
  const reasons = new Map<string, number>()
  for (const r of results) if (r.status === 'skip') reasons.set(r.reason || '(no reason given)', (reasons.get(r.reason || '(no reason given)') ?? 0) + 1)
  return [...reasons].sort((a, b) => b[1] - a[1])
}
