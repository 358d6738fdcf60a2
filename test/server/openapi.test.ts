/**
 * /openapi.json describes every route: its operations are exactly the router's (method + path, HEAD aside, which
 * Fastify derives from GET), each with its path parameters, a described answer and its family's error body.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { registeredRoutes } from '../../src/server/http/openapi.js'
import { startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { openApiOperations, type OpenApiDocument } from '../../src/testkit/openapi.js'

describe('the OpenAPI document', () => {
  let server: TestServer
  let doc: OpenApiDocument
  before(async () => {
    server = await startTestServer()
    const res = await fetch(`${server.url}/openapi.json`)
    assert.equal(res.status, 200)
    doc = (await res.json()) as OpenApiDocument
  })
  after(() => server.close())

  it('is OpenAPI 3.1 with this server as its server', () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/)
    assert.equal(doc.servers[0].url, server.deps.urls.base)
  })

  it("lists exactly the router's operations (HEAD aside: Fastify derives it from GET)", () => {
    // A prefix's root is routed with and without its slash (/identity, /identity/): one operation.
    const key = (method: string, path: string) => `${method} ${path.replace(/(.)\/$/, '$1')}`
    const documented = new Set(
      openApiOperations(doc)
        .filter((op) => op.method !== 'HEAD')
        .map((op) => key(op.method, op.path)),
    )
    const routed = new Set(
      registeredRoutes(server.app)
        .filter((r) => r.method !== 'HEAD')
        .map((r) => key(r.method, r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{*}'))),
    )
    const undocumented = [...routed].filter((k) => !documented.has(k))
    const unrouted = [...documented].filter((k) => !routed.has(k))
    assert.deepEqual(undocumented, [], 'routes missing from /openapi.json')
    assert.deepEqual(unrouted, [], 'operations in /openapi.json that no route serves')
    assert.ok(routed.size > 300, `${routed.size} operations`)
  })

  it('describes each operation: path parameters, a success answer, the error body', () => {
    const problems: string[] = []
    const operationIds = new Set<string>()
    for (const op of openApiOperations(doc)) {
      const where = `${op.method} ${op.path}`
      if (/\/:/.test(op.path)) problems.push(`${where}: path parameters are written {name}`)
      const id = (op.operation as { operationId?: string }).operationId
      if (id !== undefined && operationIds.has(id)) problems.push(`${where}: operationId ${id} is not unique`)
      if (id !== undefined) operationIds.add(id)
      for (const name of [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])) {
        if (!op.operation.parameters?.some((p) => p.in === 'path' && p.name === name && p.required)) problems.push(`${where}: path parameter ${name}`)
      }
      const answers = Object.entries(op.operation.responses ?? {}).filter(([status]) => /^[123]/.test(status))
      // An operation served only to refuse, as Nova's libvirt driver does (os-hosts power actions), documents that
      // refusal (a status of its own besides the family's 4XX) instead.
      const refusal = Object.keys(op.operation.responses ?? {}).some((status) => /^4\d\d$/.test(status))
      if (answers.length === 0 && !refusal) problems.push(`${where}: no success answer`)
      for (const [status, answer] of answers) {
        if (answer.description === 'Default Response' && !answer.content) problems.push(`${where}: answer ${status} not described`)
      }
      // The family's error body (JSON), or for the IdP's pages for browsers an error page.
      if (!Object.values(op.operation.responses?.['4XX']?.content ?? {}).some((m) => m.schema)) problems.push(`${where}: no error body`)
    }
    assert.equal(problems.length, 0, `${problems.length} problems:\n${problems.join('\n')}`)
  })
})
