/** Persona × operation → expected status (Nova's default policies; another project's server is 404). */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ACTIVE, call, computeTestbed, createBody, setState, unlimited, type ComputeTestbed, type Persona } from './helpers.js'

type Who = 'admin' | 'member' | 'reader' | 'other'

interface Op {
  name: string
  method: string
  path: (id: string, tb: ComputeTestbed) => string
  /** A function when the body depends on the testbed (the image id). */
  body?: unknown
  version?: string
  expect: Record<Who, number>
}

const OPS: Op[] = [
  { name: 'list servers', method: 'GET', path: () => '/servers', expect: { admin: 200, member: 200, reader: 200, other: 200 } },
  { name: 'list all tenants', method: 'GET', path: () => '/servers/detail?all_tenants=1', expect: { admin: 200, member: 403, reader: 403, other: 403 } },
  { name: 'show server', method: 'GET', path: (id) => `/servers/${id}`, expect: { admin: 200, member: 200, reader: 200, other: 404 } },
  { name: 'update server', method: 'PUT', path: (id) => `/servers/${id}`, body: { server: { name: 'n' } }, expect: { admin: 200, member: 200, reader: 403, other: 404 } },
  { name: 'reboot', method: 'POST', path: (id) => `/servers/${id}/action`, body: { reboot: { type: 'HARD' } }, expect: { admin: 202, member: 202, reader: 403, other: 404 } },
  { name: 'migrate (admin)', method: 'POST', path: (id) => `/servers/${id}/action`, body: { migrate: null }, expect: { admin: 202, member: 403, reader: 403, other: 404 } },
  { name: 'lock', method: 'POST', path: (id) => `/servers/${id}/action`, body: { lock: null }, expect: { admin: 202, member: 202, reader: 403, other: 404 } },
  { name: 'metadata write', method: 'POST', path: (id) => `/servers/${id}/metadata`, body: { metadata: { a: 'b' } }, expect: { admin: 200, member: 200, reader: 403, other: 404 } },
  { name: 'instance actions', method: 'GET', path: (id) => `/servers/${id}/os-instance-actions`, expect: { admin: 200, member: 200, reader: 200, other: 404 } },
  { name: 'create server', method: 'POST', path: () => '/servers', body: () => createBody('p'), version: '2.96', expect: { admin: 202, member: 202, reader: 403, other: 202 } },
  { name: 'create flavor', method: 'POST', path: () => '/flavors', body: { flavor: { name: 'pf', ram: 64, vcpus: 1, disk: 0 } }, expect: { admin: 200, member: 403, reader: 403, other: 403 } },
  { name: 'az detail', method: 'GET', path: () => '/os-availability-zone/detail', expect: { admin: 200, member: 403, reader: 403, other: 403 } },
  { name: 'quota update', method: 'PUT', path: (_id, tb) => `/os-quota-sets/${tb.member.projectId}`, body: { quota_set: { key_pairs: 100 } }, expect: { admin: 200, member: 403, reader: 403, other: 403 } },
  { name: 'quota show', method: 'GET', path: (_id, tb) => `/os-quota-sets/${tb.member.projectId}`, expect: { admin: 200, member: 200, reader: 200, other: 403 } },
  { name: 'usage list', method: 'GET', path: () => '/os-simple-tenant-usage', expect: { admin: 200, member: 403, reader: 403, other: 403 } },
  { name: 'server group create', method: 'POST', path: () => '/os-server-groups', body: { server_group: { name: 'g', policies: ['affinity'] } }, expect: { admin: 200, member: 200, reader: 403, other: 200 } },
  { name: 'delete server', method: 'DELETE', path: (id) => `/servers/${id}`, expect: { admin: 204, member: 204, reader: 403, other: 404 } },
]

test('policy personas', async () => {
  const tb = await computeTestbed()
  try {
    await unlimited(tb, tb.member.projectId)
    await unlimited(tb, tb.other.projectId)
    const who: Record<Who, Persona> = { admin: tb.admin, member: tb.member, reader: tb.reader, other: tb.other }
    for (const op of OPS) {
      for (const persona of ['other', 'reader', 'member', 'admin'] as Who[]) {
        const created = await call(tb, tb.member, 'POST', '/servers', createBody('prot'), '2.96')
        const id = created.body.server.id
        await setState(tb, id, ACTIVE)
        const body = typeof op.body === 'function' ? (op.body as () => unknown)() : op.body
        const r = await call(tb, who[persona], op.method, op.path(id, tb), body, op.version)
        assert.equal(r.status, op.expect[persona], `${op.name} as ${persona}: ${JSON.stringify(r.body)}`)
      }
    }
  } finally {
    await tb.close()
  }
})
