/**
 * Persona × operation → status, after Keystone's default policies (see src/server/policy/identity.policy.ts).
 * Personas: the cloud admin (admin on a project), a member and a reader of project A, a member of project B,
 * the admin of domain `dom1` (domain-scoped) and a system reader. Writes that the policy denies must change
 * nothing; the admin runs last so destructive operations find their target intact for the others.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { IDENTITY_POLICY } from '../../../src/server/policy/identity.policy.js'
import { errorMessage, startFixture, type Fixture, type Reply } from './fixture.js'

const PERSONAS = ['memberA', 'readerA', 'memberB', 'domAdmin', 'sysReader', 'admin'] as const
type Persona = (typeof PERSONAS)[number]

interface World {
  projectA: string
  projectB: string
  projectDom: string
  dom: string
  target: string
  targetDom: string
  groupDom: string
  self: Record<Persona, string>
  roles: Record<string, string>
}

type Op = [name: string, run: (call: (method: string, path: string, body?: unknown) => Promise<Reply>, w: World, who: Persona) => Promise<Reply>, expect: Record<Persona, number>]

const all = (status: number): Record<Persona, number> => Object.fromEntries(PERSONAS.map((p) => [p, status])) as Record<Persona, number>
const only = (allowed: Partial<Record<Persona, number>>, otherwise = 403): Record<Persona, number> => ({ ...all(otherwise), ...allowed })

const OPS: Op[] = [
  ['list projects', (c) => c('GET', '/projects'), only({ admin: 200, sysReader: 200, domAdmin: 200 })],
  ['list projects of another domain', (c) => c('GET', '/projects?domain_id=default'), only({ admin: 200, sysReader: 200 })],
  ['show project A', (c, w) => c('GET', `/projects/${w.projectA}`), only({ admin: 200, sysReader: 200, memberA: 200, readerA: 200 })],
  ['create project in default', (c, _w, who) => c('POST', '/projects', { project: { name: `p-${who}`, domain_id: 'default' } }), only({ admin: 201 })],
  ['create project in dom1', (c, w, who) => c('POST', '/projects', { project: { name: `p-${who}`, domain_id: w.dom } }), only({ admin: 201, domAdmin: 201 })],
  ['update project A', (c, w) => c('PATCH', `/projects/${w.projectA}`, { project: { description: 'changed' } }), only({ admin: 200 })],
  ['update project in dom1', (c, w) => c('PATCH', `/projects/${w.projectDom}`, { project: { description: 'changed' } }), only({ admin: 200, domAdmin: 200 })],
  ['set tags of project A', (c, w) => c('PUT', `/projects/${w.projectA}/tags`, { tags: ['t'] }), only({ admin: 200 })],
  ['list tags of project A', (c, w) => c('GET', `/projects/${w.projectA}/tags`), only({ admin: 200, sysReader: 200, memberA: 200, readerA: 200 })],
  ['list users', (c) => c('GET', '/users'), only({ admin: 200, sysReader: 200, domAdmin: 200 })],
  ['show self', (c, w, who) => c('GET', `/users/${w.self[who]}`), all(200)],
  ['list own projects', (c, w, who) => c('GET', `/users/${w.self[who]}/projects`), all(200)],
  ['list own groups', (c, w, who) => c('GET', `/users/${w.self[who]}/groups`), all(200)],
  ['show another user', (c, w) => c('GET', `/users/${w.target}`), only({ admin: 200, sysReader: 200 })],
  ['list another user’s projects', (c, w) => c('GET', `/users/${w.target}/projects`), only({ admin: 200, sysReader: 200 })],
  ['update another user', (c, w) => c('PATCH', `/users/${w.target}`, { user: { description: 'x' } }), only({ admin: 200 })],
  ['update a user of dom1', (c, w) => c('PATCH', `/users/${w.targetDom}`, { user: { description: 'x' } }), only({ admin: 200, domAdmin: 200 })],
  ['create user in dom1', (c, w, who) => c('POST', '/users', { user: { name: `u-${who}`, domain_id: w.dom } }), only({ admin: 201, domAdmin: 201 })],
  ['create user in default', (c, _w, who) => c('POST', '/users', { user: { name: `u-${who}`, domain_id: 'default' } }), only({ admin: 201 })],
  ['list groups', (c) => c('GET', '/groups?domain_id=default'), only({ admin: 200, sysReader: 200 })],
  ['create group in default', (c, _w, who) => c('POST', '/groups', { group: { name: `g-${who}`, domain_id: 'default' } }), only({ admin: 201 })],
  ['list roles', (c) => c('GET', '/roles'), only({ admin: 200, sysReader: 200, domAdmin: 200 })],
  ['show role', (c, w) => c('GET', `/roles/${w.roles.member}`), only({ admin: 200, sysReader: 200, domAdmin: 200 })],
  ['create role', (c, _w, who) => c('POST', '/roles', { role: { name: `r-${who}` } }), only({ admin: 201 })],
  ['imply roles', (c, w) => c('PUT', `/roles/${w.roles.custom}/implies/${w.roles.reader}`), only({ admin: 201 })],
  ['grant on project A', (c, w) => c('PUT', `/projects/${w.projectA}/users/${w.target}/roles/${w.roles.member}`), only({ admin: 204 })],
  ['grant on dom1 project', (c, w) => c('PUT', `/projects/${w.projectDom}/users/${w.targetDom}/roles/${w.roles.member}`), only({ admin: 204, domAdmin: 204 })],
  ['grant on dom1', (c, w) => c('PUT', `/domains/${w.dom}/users/${w.targetDom}/roles/${w.roles.reader}`), only({ admin: 204, domAdmin: 204 })],
  ['grant on the system', (c, w) => c('PUT', `/system/users/${w.target}/roles/${w.roles.reader}`), only({ admin: 204 })],
  ['grant on dom1 project to a user of another domain', (c, w) => c('PUT', `/projects/${w.projectDom}/users/${w.self.memberB}/roles/${w.roles.reader}`), only({ admin: 204 })],
  ['add a user of another domain to a dom1 group', (c, w) => c('PUT', `/groups/${w.groupDom}/users/${w.self.memberB}`), only({ admin: 204 })],
  ['add a dom1 user to a dom1 group', (c, w) => c('PUT', `/groups/${w.groupDom}/users/${w.targetDom}`), only({ admin: 204, domAdmin: 204 })],
  ['check grant on project A', (c, w) => c('HEAD', `/projects/${w.projectA}/users/${w.self.memberA}/roles/${w.roles.member}`), only({ admin: 204, sysReader: 204 })],
  ['revoke on project A', (c, w) => c('DELETE', `/projects/${w.projectA}/users/${w.target}/roles/${w.roles.member}`), only({ admin: 204 })],
  ['list role assignments', (c) => c('GET', '/role_assignments'), only({ admin: 200, sysReader: 200, domAdmin: 200 })],
  ['list role assignments of project A', (c, w) => c('GET', `/role_assignments?scope.project.id=${w.projectA}`), only({ admin: 200, sysReader: 200 })],
  ['list domains', (c) => c('GET', '/domains'), only({ admin: 200, sysReader: 200 })],
  ['show default domain', (c) => c('GET', '/domains/default'), only({ admin: 200, sysReader: 200, memberA: 200, readerA: 200, memberB: 200 })],
  ['create domain', (c, _w, who) => c('POST', '/domains', { domain: { name: `d-${who}` } }), only({ admin: 201 })],
  ['disable dom1', (c, w) => c('PATCH', `/domains/${w.dom}`, { domain: { description: 'x' } }), only({ admin: 200 })],
  ['list services', (c) => c('GET', '/services'), only({ admin: 200, sysReader: 200 })],
  ['list endpoints', (c) => c('GET', '/endpoints'), only({ admin: 200, sysReader: 200 })],
  ['create service', (c) => c('POST', '/services', { service: { type: 'x' } }), only({ admin: 201 })],
  ['list regions', (c) => c('GET', '/regions'), all(200)],
  ['show region', (c) => c('GET', '/regions/RegionOne'), all(200)],
  ['create region', (c, _w, who) => c('POST', '/regions', { region: { id: `R-${who}` } }), only({ admin: 201 })],
  ['delete user target', (c, w) => c('DELETE', `/users/${w.target}`), only({ admin: 204 })],
]

describe('identity admin policy (personas × operations)', () => {
  let f: Fixture
  let world: World
  const tokens = {} as Record<Persona, string>

  before(async () => {
    f = await startFixture('sqlite')
    const ok = async (method: string, path: string, body?: unknown) => {
      const res = await f.call(method, path, { body })
      assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
      return res.body
    }
    const roles: Record<string, string> = {}
    for (const r of (await ok('GET', '/roles')).roles) roles[r.name] = r.id
    roles.custom = (await ok('POST', '/roles', { role: { name: 'custom' } })).role.id
    const dom = (await ok('POST', '/domains', { domain: { name: 'dom1' } })).domain.id
    const projectA = (await ok('POST', '/projects', { project: { name: 'A' } })).project.id
    const projectB = (await ok('POST', '/projects', { project: { name: 'B' } })).project.id
    const projectDom = (await ok('POST', '/projects', { project: { name: 'D', domain_id: dom } })).project.id
    const user = async (name: string, domainId = 'default') => (await ok('POST', '/users', { user: { name, domain_id: domainId } })).user.id as string
    const self = { admin: f.server.bootstrap.adminUserId } as Record<Persona, string>
    self.memberA = await user('memberA')
    self.readerA = await user('readerA')
    self.memberB = await user('memberB')
    self.domAdmin = await user('domAdmin', dom)
    self.sysReader = await user('sysReader')
    await ok('PUT', `/projects/${projectA}/users/${self.memberA}/roles/${roles.member}`)
    await ok('PUT', `/projects/${projectA}/users/${self.readerA}/roles/${roles.reader}`)
    await ok('PUT', `/projects/${projectB}/users/${self.memberB}/roles/${roles.member}`)
    await ok('PUT', `/domains/${dom}/users/${self.domAdmin}/roles/${roles.admin}`)
    await ok('PUT', `/system/users/${self.sysReader}/roles/${roles.reader}`)
    const groupDom = (await ok('POST', '/groups', { group: { name: 'G', domain_id: dom } })).group.id
    world = { projectA, projectB, projectDom, dom, target: await user('target'), targetDom: await user('targetDom', dom), groupDom, self, roles }
    tokens.admin = f.adminToken
    tokens.memberA = await f.tokenFor(self.memberA, { p: projectA })
    tokens.readerA = await f.tokenFor(self.readerA, { p: projectA })
    tokens.memberB = await f.tokenFor(self.memberB, { p: projectB })
    tokens.domAdmin = await f.tokenFor(self.domAdmin, { d: dom })
    tokens.sysReader = await f.tokenFor(self.sysReader, { sys: 'all' })
  })
  after(() => f.close())

  for (const [name, run, expected] of OPS) {
    it(name, async () => {
      const seen: Record<string, number> = {}
      for (const who of PERSONAS) {
        let head = false
        const res = await run((method, path, body) => {
          head = method === 'HEAD'
          return f.call(method, path, { token: tokens[who], body })
        }, world, who)
        seen[who] = res.status
        if (res.status >= 400 && !head) errorMessage(res)
      }
      assert.deepEqual(seen, expected)
    })
  }

  it('a denied write changes nothing', async () => {
    const before = (await f.call('GET', `/projects/${world.projectA}`)).body.project
    const res = await f.call('PATCH', `/projects/${world.projectA}`, { token: tokens.memberA, body: { project: { name: 'hijacked', enabled: false } } })
    assert.equal(res.status, 403)
    assert.deepEqual((await f.call('GET', `/projects/${world.projectA}`)).body.project, before)
  })

  it('a domain admin sees only its own domain in lists', async () => {
    const projects = (await f.call('GET', '/projects', { token: tokens.domAdmin })).body.projects
    assert.ok(projects.length > 0 && projects.every((p: { domain_id: string }) => p.domain_id === world.dom))
    const users = (await f.call('GET', '/users', { token: tokens.domAdmin })).body.users
    assert.ok(users.length > 0 && users.every((u: { domain_id: string }) => u.domain_id === world.dom))
    const assignments = (await f.call('GET', '/role_assignments', { token: tokens.domAdmin })).body.role_assignments
    assert.ok(assignments.length > 0)
    for (const a of assignments) assert.ok(a.scope.domain?.id === world.dom || a.scope.project?.id === world.projectDom, JSON.stringify(a))
  })

  it('every operation of the policy table is enforced by a route, and routes name only known operations', () => {
    const dir = new URL('../../../../src/server/api/identity/admin/', import.meta.url)
    const source = readdirSync(dir).map((name) => readFileSync(new URL(name, dir), 'utf8')).join('\n')
    const used = new Set(source.match(/'identity:[a-z_]+'/g)!.map((s) => s.slice(1, -1)))
    for (const op of Object.keys(IDENTITY_POLICY)) assert.ok(used.has(op), `${op} is in the policy table but no route enforces it`)
    for (const op of used) assert.ok(op in IDENTITY_POLICY, `${op} is used by a route but not in the policy table`)
  })
})
