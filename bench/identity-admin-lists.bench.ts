/**
 * Identity admin reads under load: `GET /identity/v3/projects` and an effective, named role-assignment listing,
 * each for 4 s at concurrency 8 against a SQLite server holding 100 projects, 100 users and their grants.
 */
import type { BenchRow, BenchRun } from './harness.js'
import { startTestServer } from '../src/testkit/harness.js'

interface AutocannonResult {
  requests: { average: number }
  latency: { p50: number; p99: number }
  non2xx: number
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>

export const run: BenchRun = async () => {
  // autocannon ships no types; only its promise form is used.
  const autocannon = (await import('autocannon' as string)).default as Autocannon
  const server = await startTestServer()
  const rows: BenchRow[] = []
  try {
    const token = (await server.deps.tokens.issue({ userId: server.bootstrap.adminUserId, methods: ['password'], scope: { p: server.bootstrap.adminProjectId } })).token
    const base = `${server.url}/identity/v3`
    const headers = { 'x-auth-token': token, 'content-type': 'application/json' }
    const post = async (path: string, body: unknown) => (await (await fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })).json()) as Record<string, { id: string }>
    const roles = (await (await fetch(`${base}/roles?name=member`, { headers })).json()) as { roles: { id: string }[] }
    for (let i = 0; i < 100; i++) {
      const project = (await post('/projects', { project: { name: `bench-${i}` } })).project
      const user = (await post('/users', { user: { name: `bench-user-${i}` } })).user
      await fetch(`${base}/projects/${project.id}/users/${user.id}/roles/${roles.roles[0].id}`, { method: 'PUT', headers: { 'x-auth-token': token } })
    }
    for (const [figure, path] of [
      ['GET /v3/projects (101 projects), concurrency 8', '/projects'],
      ['GET /v3/role_assignments?effective&include_names (~200 rows), concurrency 8', '/role_assignments?effective&include_names'],
    ]) {
      const result = await autocannon({ url: `${base}${path}`, connections: 8, duration: 4, headers: { 'x-auth-token': token } })
      rows.push({ figure, value: Math.round(result.requests.average), unit: 'req/s', note: `p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}` })
    }
  } finally {
    await server.close()
  }
  return rows
}
