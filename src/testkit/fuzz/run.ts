/**
 * The fuzz suite's properties, checked for every operation of /openapi.json with fast-check:
 *
 * 1. Never a 5xx, never a hang (each request is bounded).
 * 2. A 4xx is in the service's own error shape (the operation's documented 4XX schema); a 2xx body matches the
 *    documented answer for its status.
 * 3. A refused request (4xx) changes nothing: every table's rows are the same before and after.
 * 4. Another project's resource is invisible: what a member of another project gets for the admin's resource
 *    is what it gets for one that does not exist (same status, never a 2xx).
 *
 * A failure names the request exactly (method, URL, headers, body) and fast-check's seed and path, so
 * `npm run fuzz -- --seed <seed> --only '<METHOD> <path>'` replays it.
 */
import { randomUUID } from 'node:crypto'
import { request, type IncomingHttpHeaders } from 'node:http'
import { Ajv, type ValidateFunction } from 'ajv'
import fc from 'fast-check'
import type { JsonSchema, Operation, OpenApiDocument } from '../openapi.js'
import { materialize, OWNED_KINDS, planArbitrary, type Lane, type ParamPlan, type Plan, type WireRequest } from './requests.js'
import { changes, stateDigest, type Digest } from './state.js'
import type { World } from './world.js'

/** Long enough for a slow machine; an operation that documents a wait gets that wait on top. */
const REQUEST_TIMEOUT_MS = 15_000

export interface Answer {
  status: number
  headers: IncomingHttpHeaders
  text: string
}

export class FuzzFailure extends Error {}

export interface OperationResult {
  operation: string
  runs: number
  /** How many answers of each status the operation gave (coverage: did valid input get through?). */
  statuses: Record<number, number>
  /** fast-check's report: the seed, the path, the shrunk plan and what went wrong. */
  failure?: string
}

interface Checker {
  world: World
  doc: OpenApiDocument
  ajv: Ajv
  validators: Map<JsonSchema, ValidateFunction>
  /** The state as last seen, when nothing can have changed it since. */
  known?: Digest
  /** An accepted request removed something: the world needs repair after this operation. */
  dirty: boolean
  /** Statuses answered during the current operation. */
  statuses: Record<number, number>
}

function describe(req: WireRequest, answer?: Answer): string {
  const body = req.body === undefined ? '(none)' : /^[\t\n\r -~]*$/.test(req.body.toString('latin1')) ? req.body.toString('latin1').slice(0, 2000) : `base64:${req.body.toString('base64').slice(0, 2000)}`
  return [
    `${req.method} ${req.url}`,
    `headers: ${JSON.stringify(Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== 'x-auth-token' && k !== 'authorization')))}`,
    `body: ${body}`,
    ...(answer ? [`answer: ${answer.status} ${answer.text.slice(0, 1000)}`] : []),
  ].join('\n  ')
}

/** node:http rather than fetch: a fuzzer sends what fetch refuses to (a GET with a body, raw escapes). */
function send(req: WireRequest, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(req.url)
    const headers = { ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) }
    const r = request({ host: url.hostname, port: url.port, method: req.method, path: `${url.pathname}${url.search}`, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', (err) => reject(new FuzzFailure(`the answer broke off (${err.message})\n  ${describe(req)}`)))
    })
    r.setTimeout(timeoutMs, () => {
      r.destroy()
      reject(new FuzzFailure(`no answer within ${timeoutMs} ms (a hang)\n  ${describe(req)}`))
    })
    r.on('error', (err) => reject(new FuzzFailure(`the connection failed (${err.message})\n  ${describe(req)}`)))
    r.end(req.body)
  })
}

function validator(c: Checker, schema: JsonSchema): ValidateFunction {
  let v = c.validators.get(schema)
  if (!v) c.validators.set(schema, (v = c.ajv.compile(schema)))
  return v
}

/** The documented answer for a status: its media types (none: no body) and their schemas. */
function documentedAnswer(op: Operation, status: number): Record<string, { schema?: JsonSchema }> | undefined {
  const responses = op.operation.responses ?? {}
  const answer = responses[String(status)] ?? responses[`${String(status)[0]}XX`]
  return answer ? (answer.content ?? {}) : undefined
}

/** Checks the answer's status and body against the properties; throws a FuzzFailure. */
function checkAnswer(c: Checker, op: Operation, req: WireRequest, answer: Answer): void {
  if (answer.status >= 500) throw new FuzzFailure(`a ${answer.status}\n  ${describe(req, answer)}`)
  if (req.method === 'HEAD' || answer.status === 204 || answer.status === 304) return
  const media = documentedAnswer(op, answer.status)
  if (!media) throw new FuzzFailure(`status ${answer.status} is not documented for ${op.method} ${op.path}\n  ${describe(req, answer)}`)
  const types = Object.keys(media)
  if (types.length === 0) {
    if (answer.status >= 400) throw new FuzzFailure(`a ${answer.status} without an error body documented\n  ${describe(req, answer)}`)
    return
  }
  const type = String(answer.headers['content-type'] ?? '').split(';')[0].trim()
  if (!media['application/json']) {
    // Not JSON (pages, files): the answer is of a documented media type (any type where octet-stream is documented).
    if (!types.includes(type) && !types.includes('application/octet-stream')) throw new FuzzFailure(`a ${answer.status} of type ${type}, documented: ${types.join(', ')}\n  ${describe(req, answer)}`)
    return
  }
  if (answer.text === '' && answer.status < 400) return
  let body: unknown
  try {
    body = JSON.parse(answer.text)
  } catch {
    throw new FuzzFailure(`the ${answer.status} answer is not JSON\n  ${describe(req, answer)}`)
  }
  const schema = media['application/json'].schema
  if (!schema) return
  const valid = validator(c, schema)
  if (!valid(body)) {
    const what = answer.status >= 400 ? "not in the service's error shape" : 'not as documented'
    throw new FuzzFailure(`the ${answer.status} answer is ${what}: ${c.ajv.errorsText(valid.errors)}\n  ${describe(req, answer)}`)
  }
}

function timeoutFor(op: Operation): number {
  const wait = op.operation.parameters?.find((p) => p.in === 'query' && p.name === 'wait')?.schema?.maximum
  return REQUEST_TIMEOUT_MS + (typeof wait === 'number' ? wait * 1000 : 0)
}

/** The same plan with each reference to the admin's owned resource replaced by a random id that names nothing. */
function twinOf(plan: Plan): Record<string, ParamPlan> | undefined {
  const owned = Object.entries(plan.params).filter(([, p]) => 'fixture' in p && p.owner === 'admin' && OWNED_KINDS.has(p.fixture))
  if (owned.length === 0) return undefined
  return { ...plan.params, ...Object.fromEntries(owned.map(([name]) => [name, { literal: randomUUID() }])) }
}

async function exercise(c: Checker, op: Operation, plan: Plan): Promise<void> {
  const store = c.world.server.deps.store
  if (c.dirty && plan.persona === 'member' && twinOf(plan)) {
    // An accepted admin write of this operation may have shared the admin's resource (an address scope's small
    // body often does): a shared resource rightly answers another project 403, not 404. Private again first.
    await c.world.keepPrivate()
    c.known = undefined
  }
  const req = materialize(c.world, c.world.server.url, op, plan)
  const before = c.known ?? (await stateDigest(store))
  c.known = undefined
  const answer = await send(req, timeoutFor(op))
  c.statuses[answer.status] = (c.statuses[answer.status] ?? 0) + 1
  checkAnswer(c, op, req, answer)
  if (plan.persona === 'anonymous' && answer.status < 300 && !isOpen(op)) throw new FuzzFailure(`answered ${answer.status} without authentication, but the operation is not open\n  ${describe(req, answer)}`)
  if (answer.status >= 400) {
    const after = await stateDigest(store)
    const changed = changes(before, after)
    if (changed.length) throw new FuzzFailure(`a refused request (${answer.status}) changed the state:\n    ${changed.join('\n    ')}\n  ${describe(req, answer)}`)
    c.known = after
  } else if (req.method !== 'GET' && req.method !== 'HEAD') {
    // An accepted write may have removed a fixture or changed who sees it: the world is repaired after the operation.
    c.dirty = true
  }
  const twin = plan.persona === 'member' ? twinOf(plan) : undefined
  if (twin) {
    if (answer.status < 300) throw new FuzzFailure(`a member of another project got ${answer.status} for the admin's resource\n  ${describe(req, answer)}`)
    const twinReq = materialize(c.world, c.world.server.url, op, plan, twin)
    const twinAnswer = await send(twinReq, timeoutFor(op))
    checkAnswer(c, op, twinReq, twinAnswer)
    c.known = undefined
    if (twinAnswer.status !== answer.status) {
      throw new FuzzFailure(
        `another project's resource is told apart from a missing one: ${answer.status} for it, ${twinAnswer.status} for a random id\n  ${describe(req, answer)}\n  twin: ${describe(twinReq, twinAnswer)}`,
      )
    }
  }
}

export interface FuzzOptions {
  seed: number
  runsPerOperation: number
  /** Stops shrinking or running an operation after this long. */
  timeLimitMs?: number
}

/** A stable number for an operation, so each gets its own stream of cases from one seed. */
function operationSeed(seed: number, key: string): number {
  let h = seed | 0
  for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0
  return h
}

/**
 * Who sends an operation's cases and what kind, case after case: a valid request from the caller the route is for
 * first (so its real work runs even in CI's few cases), then another caller's, then refusals. An operation's cases
 * go round these lanes in order, so every lane gets its share whatever the seed.
 */
const LANES: Record<'token' | 'open' | 'agent', Lane[]> = {
  token: [
    { persona: 'admin', mode: 'valid' },
    { persona: 'member', mode: 'valid' },
    { persona: 'admin', mode: 'chaos' },
    { persona: 'anonymous', mode: 'chaos' },
    { persona: 'member', mode: 'chaos' },
  ],
  open: [
    { persona: 'anonymous', mode: 'valid' },
    { persona: 'anonymous', mode: 'chaos' },
    { persona: 'admin', mode: 'valid' },
    { persona: 'member', mode: 'chaos' },
  ],
  // The agent's routes take a host credential (their description says so); a user's token is refused there.
  agent: [
    { persona: 'host', mode: 'valid' },
    { persona: 'host', mode: 'chaos' },
    { persona: 'admin', mode: 'valid' },
    { persona: 'anonymous', mode: 'chaos' },
  ],
}

export function lanesFor(op: Operation): Lane[] {
  if (op.operation.security?.some((s) => 'hostCredential' in s)) return LANES.agent
  return isOpen(op) ? LANES.open : LANES.token
}

const isOpen = (op: Operation) => Array.isArray(op.operation.security) && op.operation.security.length === 0

export function newChecker(world: World, doc: OpenApiDocument): Checker {
  return { world, doc, ajv: new Ajv({ strict: false, allErrors: false, validateFormats: false }), validators: new Map(), dirty: false, statuses: {} }
}

/** What failed and how to replay it: fast-check's seed and path, then the shrunk request and its answer. */
function report(details: fc.RunDetails<[Plan]>): string {
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
  return `seed ${details.seed}, path ${details.counterexamplePath ?? ''} (after ${details.numRuns} runs, shrunk ${details.numShrinks} times)\n${error}`
}

/** Runs the properties on one operation, its cases spread over its lanes; repairs the world afterwards when an accepted request removed something. */
export async function fuzzOperation(c: Checker, op: Operation, options: FuzzOptions): Promise<OperationResult> {
  const key = `${op.method} ${op.path}`
  const started = Date.now()
  const lanes = lanesFor(op)
  c.statuses = {}
  let runs = 0
  let failure: string | undefined
  for (const [i, lane] of lanes.entries()) {
    const numRuns = Math.floor(options.runsPerOperation / lanes.length) + (i < options.runsPerOperation % lanes.length ? 1 : 0)
    if (numRuns === 0 || failure) continue
    const property = fc.asyncProperty(planArbitrary(op, { doc: c.doc, lane }), (plan) => exercise(c, op, plan))
    const details = await fc.check(property, {
      seed: operationSeed(options.seed, `${key} ${i}`),
      numRuns,
      interruptAfterTimeLimit: options.timeLimitMs === undefined ? undefined : Math.max(1, options.timeLimitMs - (Date.now() - started)),
      markInterruptAsFailure: false,
    })
    runs += details.numRuns
    if (details.failed) failure = `as ${lane.persona}, ${lane.mode} input: ${report(details)}`
  }
  if (c.dirty) {
    await c.world.repair()
    c.dirty = false
    c.known = undefined
  }
  return { operation: key, runs, statuses: c.statuses, failure }
}
