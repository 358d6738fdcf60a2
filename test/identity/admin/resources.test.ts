import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../../src/testkit/harness.js'
import { verifyPassword } from '../../../src/server/crypto/passwords.js'
import { identityGeneration } from '../../../src/server/identity/generation.js'
import { errorMessage, startFixture, type Fixture } from './fixture.js'

for (const dialect of DIALECTS) {
  describe(`identity admin resources (${dialect})`, () => {
    let f: Fixture
    before(async () => {
      f = await startFixture(dialect)
    })
    after(() => f.close())

    it('creates, lists, shows, updates and deletes domains; an enabled domain cannot be deleted', async () => {
      const created = await f.call('POST', '/domains', { body: { domain: { name: 'acme', description: 'Acme Inc' } } })
      assert.equal(created.status, 201)
      const d = created.body.domain
      assert.match(d.id, /^[0-9a-f]{32}$/)
      assert.deepEqual({ name: d.name, description: d.description, enabled: d.enabled, options: d.options }, { name: 'acme', description: 'Acme Inc', enabled: true, options: {} })
      assert.equal(d.links.self, `${f.base}/domains/${d.id}`)

      assert.equal((await f.call('POST', '/domains', { body: { domain: { name: 'acme' } } })).status, 409)
      const byName = await f.call('GET', '/domains?name=acme')
      assert.equal(byName.status, 200)
      assert.deepEqual(byName.body.domains.map((x: { id: string }) => x.id), [d.id])
      assert.deepEqual(byName.body.links, { self: `${f.base}/domains?name=acme`, previous: null, next: null })
      assert.equal((await f.call('GET', `/domains/${d.id}`)).body.domain.name, 'acme')

      const enabledDelete = await f.call('DELETE', `/domains/${d.id}`)
      assert.equal(enabledDelete.status, 403)
      assert.match(errorMessage(enabledDelete), /disable it first/)
      const patched = await f.call('PATCH', `/domains/${d.id}`, { body: { domain: { enabled: false, description: null } } })
      assert.equal(patched.status, 200)
      assert.equal(patched.body.domain.enabled, false)
      assert.equal(patched.body.domain.description, '')
      assert.deepEqual((await f.call('GET', '/domains?enabled=false')).body.domains.map((x: { name: string }) => x.name), ['acme'])
      assert.equal((await f.call('DELETE', `/domains/${d.id}`)).status, 204)
      assert.equal((await f.call('GET', `/domains/${d.id}`)).status, 404)
    })

    it('deleting a disabled domain removes its projects, users and groups', async () => {
      const d = (await f.call('POST', '/domains', { body: { domain: { name: 'doomed' } } })).body.domain
      const p = (await f.call('POST', '/projects', { body: { project: { name: 'p', domain_id: d.id } } })).body.project
      const u = (await f.call('POST', '/users', { body: { user: { name: 'u', domain_id: d.id } } })).body.user
      const g = (await f.call('POST', '/groups', { body: { group: { name: 'g', domain_id: d.id } } })).body.group
      assert.equal((await f.call('PUT', `/projects/${p.id}/users/${u.id}/roles/${await roleId(f, 'member')}`)).status, 204)
      await f.call('PATCH', `/domains/${d.id}`, { body: { domain: { enabled: false } } })
      assert.equal((await f.call('DELETE', `/domains/${d.id}`)).status, 204)
      for (const path of [`/projects/${p.id}`, `/users/${u.id}`, `/groups/${g.id}`]) assert.equal((await f.call('GET', path)).status, 404, path)
      assert.equal((await f.call('GET', `/role_assignments?user.id=${u.id}`)).body.role_assignments.length, 0)
    })

    it('manages projects with tags, parents, filters and Keystone bodies', async () => {
      const parent = await f.call('POST', '/projects', { body: { project: { name: 'web', domain_id: 'default', description: 'Web team', tags: ['prod', 'eu'], color: 'blue' } } })
      assert.equal(parent.status, 201)
      const p = parent.body.project
      assert.deepEqual(
        { name: p.name, domain_id: p.domain_id, description: p.description, enabled: p.enabled, parent_id: p.parent_id, is_domain: p.is_domain, tags: p.tags, color: p.color },
        { name: 'web', domain_id: 'default', description: 'Web team', enabled: true, parent_id: 'default', is_domain: false, tags: ['eu', 'prod'], color: 'blue' },
      )
      assert.equal(p.links.self, `${f.base}/projects/${p.id}`)
      const child = (await f.call('POST', '/projects', { body: { project: { name: 'web-child', parent_id: p.id, enabled: false } } })).body.project
      assert.equal(child.parent_id, p.id)
      assert.equal(child.domain_id, 'default', 'the domain comes from the parent')

      const dup = await f.call('POST', '/projects', { body: { project: { name: 'web', domain_id: 'default' } } })
      assert.equal(dup.status, 409)
      errorMessage(dup)

      const names = async (q: string) => (await f.call('GET', `/projects${q}`)).body.projects.map((x: { name: string }) => x.name).sort()
      assert.deepEqual(await names('?name=web'), ['web'])
      assert.deepEqual(await names(`?parent_id=${p.id}`), ['web-child'])
      assert.deepEqual(await names('?enabled=false'), ['web-child'])
      assert.deepEqual(await names('?tags=prod,eu'), ['web'])
      assert.deepEqual(await names('?tags-any=eu,none'), ['web'])
      assert.ok(!(await names('?not-tags-any=prod')).includes('web'))
      assert.ok((await names('?domain_id=default')).includes('admin'))
      assert.deepEqual(await names('?domain_id=nope'), [])
      assert.deepEqual(await names('?is_domain=true'), ['Default'], 'domains are the projects acting as domains')

      const set = await f.call('PATCH', `/projects/${p.id}`, { body: { project: { name: 'web2', description: 'renamed', enabled: false, tags: ['x'] } } })
      assert.equal(set.status, 200)
      assert.deepEqual([set.body.project.name, set.body.project.description, set.body.project.enabled, set.body.project.tags], ['web2', 'renamed', false, ['x']])
      assert.equal((await f.call('PATCH', `/projects/${p.id}`, { body: { project: { domain_id: 'other' } } })).status, 400)

      const blocked = await f.call('DELETE', `/projects/${p.id}`)
      assert.equal(blocked.status, 403, 'a project with children cannot be deleted')
      assert.equal((await f.call('DELETE', `/projects/${child.id}`)).status, 204)
      assert.equal((await f.call('DELETE', `/projects/${p.id}`)).status, 204)
      assert.equal((await f.call('GET', `/projects/${p.id}`)).status, 404)
      assert.equal((await f.call('DELETE', `/projects/${p.id}`)).status, 404)
    })

    it('serves the project tags sub-resource', async () => {
      const p = (await f.call('POST', '/projects', { body: { project: { name: 'tagged' } } })).body.project
      assert.deepEqual((await f.call('GET', `/projects/${p.id}/tags`)).body, { tags: [] })
      assert.deepEqual((await f.call('PUT', `/projects/${p.id}/tags`, { body: { tags: ['b', 'a'] } })).body, { tags: ['a', 'b'] })
      const one = await f.call('PUT', `/projects/${p.id}/tags/c`)
      assert.equal(one.status, 201)
      assert.equal(one.headers.get('location'), `${f.base}/projects/${p.id}/tags/c`)
      assert.equal((await f.call('GET', `/projects/${p.id}/tags/c`)).status, 204)
      assert.equal((await f.call('HEAD', `/projects/${p.id}/tags/zz`)).status, 404)
      assert.equal((await f.call('DELETE', `/projects/${p.id}/tags/c`)).status, 204)
      assert.deepEqual((await f.call('GET', `/projects/${p.id}/tags`)).body.tags, ['a', 'b'])
      const bad = await f.call('PUT', `/projects/${p.id}/tags`, { body: { tags: ['a/b'] } })
      assert.equal(bad.status, 400)
      assert.match(errorMessage(bad), /tags\/0/)
      assert.equal((await f.call('DELETE', `/projects/${p.id}/tags`)).status, 204)
      assert.deepEqual((await f.call('GET', `/projects/${p.id}`)).body.project.tags, [])
    })

    it('manages users: options, hashed passwords, password_created_at, filters', async () => {
      const created = await f.call('POST', '/users', {
        body: { user: { name: 'alice', domain_id: 'default', password: 'secret-one', email: 'a@example.com', options: { multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']], ignore_lockout_failure_attempts: true } } },
      })
      assert.equal(created.status, 201)
      const u = created.body.user
      assert.equal(u.password, undefined, 'never echoes the password')
      assert.deepEqual(
        { name: u.name, domain_id: u.domain_id, enabled: u.enabled, email: u.email, password_expires_at: u.password_expires_at, federated: u.federated },
        { name: 'alice', domain_id: 'default', enabled: true, email: 'a@example.com', password_expires_at: null, federated: [] },
      )
      assert.deepEqual(u.options, { multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']], ignore_lockout_failure_attempts: true })
      const db = f.server.deps.store.db
      const row = await db.selectFrom('users').selectAll().where('id', '=', u.id).executeTakeFirstOrThrow()
      assert.match(row.password_hash!, /^scrypt\$/)
      assert.ok(await verifyPassword('secret-one', row.password_hash!))
      assert.equal((await f.call('POST', '/users', { body: { user: { name: 'alice' } } })).status, 409)

      const before = await identityGeneration(db)
      await new Promise((r) => setTimeout(r, 5))
      const patched = await f.call('PATCH', `/users/${u.id}`, { body: { user: { password: 'secret-two', options: { multi_factor_auth_rules: null, lock_password: true } } } })
      assert.equal(patched.status, 200)
      assert.deepEqual(patched.body.user.options, { multi_factor_auth_enabled: true, ignore_lockout_failure_attempts: true, lock_password: true })
      const row2 = await db.selectFrom('users').selectAll().where('id', '=', u.id).executeTakeFirstOrThrow()
      assert.ok(await verifyPassword('secret-two', row2.password_hash!))
      assert.ok(row2.password_created_at! > row.password_created_at!, 'a new password moves password_created_at, so older tokens stop validating')
      assert.ok((await identityGeneration(db)) > before, 'every identity write bumps the generation')

      assert.deepEqual((await f.call('GET', '/users?name=alice')).body.users.map((x: { id: string }) => x.id), [u.id])
      assert.ok((await f.call('GET', '/users?domain_id=default')).body.users.length >= 2)
      await f.call('PATCH', `/users/${u.id}`, { body: { user: { enabled: false } } })
      assert.deepEqual((await f.call('GET', '/users?enabled=0')).body.users.map((x: { name: string }) => x.name), ['alice'])
      assert.equal((await f.call('DELETE', `/users/${u.id}`)).status, 204)
      assert.equal((await f.call('GET', `/users/${u.id}`)).status, 404)
    })

    it('lets a user change its own password with the original one, without a token', async () => {
      const u = (await f.call('POST', '/users', { body: { user: { name: 'bob', password: 'old-password' } } })).body.user
      const wrong = await f.call('POST', `/users/${u.id}/password`, { token: null, body: { user: { original_password: 'nope', password: 'new-password' } } })
      assert.equal(wrong.status, 401)
      errorMessage(wrong)
      const db = f.server.deps.store.db
      assert.equal((await db.selectFrom('users').select('failed_auth_count').where('id', '=', u.id).executeTakeFirstOrThrow()).failed_auth_count, 1)
      const extra = await f.call('POST', `/users/${u.id}/password`, { token: null, body: { user: { original_password: 'old-password', password: 'x', admin: true } } })
      assert.equal(extra.status, 400)
      assert.match(errorMessage(extra), /user\/admin/)
      const ok = await f.call('POST', `/users/${u.id}/password`, { token: null, body: { user: { original_password: 'old-password', password: 'new-password' } } })
      assert.equal(ok.status, 204)
      const row = await db.selectFrom('users').selectAll().where('id', '=', u.id).executeTakeFirstOrThrow()
      assert.ok(await verifyPassword('new-password', row.password_hash!))
      assert.equal(row.failed_auth_count, 0)
    })

    it('refuses a self-service change of a locked password', async () => {
      const u = (await f.call('POST', '/users', { body: { user: { name: 'locked', password: 'pw-locked', options: { lock_password: true } } } })).body.user
      const res = await f.call('POST', `/users/${u.id}/password`, { token: null, body: { user: { original_password: 'pw-locked', password: 'other' } } })
      assert.equal(res.status, 403)
      assert.match(errorMessage(res), /locked/)
    })

    it('answers concurrent creations of one name with one 201 and 409s, never a 500', async () => {
      const statuses = await Promise.all(Array.from({ length: 6 }, () => f.call('POST', '/projects', { body: { project: { name: 'racy' } } }).then((r) => r.status)))
      assert.deepEqual(statuses.sort(), [201, 409, 409, 409, 409, 409])
    })

    it('disabling the domain invalidates tokens of its users', async () => {
      const d = (await f.call('POST', '/domains', { body: { domain: { name: 'dom-tokens' } } })).body.domain
      const p = (await f.call('POST', '/projects', { body: { project: { name: 'p', domain_id: d.id } } })).body.project
      const u = (await f.call('POST', '/users', { body: { user: { name: 'u', domain_id: d.id } } })).body.user
      await f.call('PUT', `/projects/${p.id}/users/${u.id}/roles/${await roleId(f, 'reader')}`)
      const token = await f.tokenFor(u.id, { p: p.id })
      assert.equal((await f.call('GET', `/projects/${p.id}`, { token })).status, 200)
      await f.call('PATCH', `/domains/${d.id}`, { body: { domain: { enabled: false } } })
      assert.equal((await f.call('GET', `/projects/${p.id}`, { token })).status, 401)
    })

    it('disabling a user or project, or removing the role, invalidates tokens', async () => {
      const p = (await f.call('POST', '/projects', { body: { project: { name: 'revoke-me' } } })).body.project
      const u = (await f.call('POST', '/users', { body: { user: { name: 'carol', password: 'pw-carol-1' } } })).body.user
      const member = await roleId(f, 'member')
      await f.call('PUT', `/projects/${p.id}/users/${u.id}/roles/${member}`)
      const check = async (token: string) => (await f.call('GET', `/users/${u.id}`, { token })).status

      let token = await f.tokenFor(u.id, { p: p.id })
      assert.equal(await check(token), 200)
      await f.call('PATCH', `/users/${u.id}`, { body: { user: { enabled: false } } })
      assert.equal(await check(token), 401)
      await f.call('PATCH', `/users/${u.id}`, { body: { user: { enabled: true } } })

      token = await f.tokenFor(u.id, { p: p.id })
      await f.call('PATCH', `/projects/${p.id}`, { body: { project: { enabled: false } } })
      assert.equal(await check(token), 401)
      await f.call('PATCH', `/projects/${p.id}`, { body: { project: { enabled: true } } })

      token = await f.tokenFor(u.id, { p: p.id })
      assert.equal((await f.call('DELETE', `/projects/${p.id}/users/${u.id}/roles/${member}`)).status, 204)
      assert.equal(await check(token), 401)
    })

    it('manages groups and membership', async () => {
      const g = (await f.call('POST', '/groups', { body: { group: { name: 'ops', description: 'Operators' } } }))
      assert.equal(g.status, 201)
      const gid = g.body.group.id
      assert.equal(g.body.group.domain_id, 'default')
      const u = (await f.call('POST', '/users', { body: { user: { name: 'dave' } } })).body.user
      assert.equal((await f.call('HEAD', `/groups/${gid}/users/${u.id}`)).status, 404)
      assert.equal((await f.call('PUT', `/groups/${gid}/users/${u.id}`)).status, 204)
      assert.equal((await f.call('HEAD', `/groups/${gid}/users/${u.id}`)).status, 204)
      assert.deepEqual((await f.call('GET', `/groups/${gid}/users`)).body.users.map((x: { name: string }) => x.name), ['dave'])
      assert.deepEqual((await f.call('GET', `/users/${u.id}/groups`)).body.groups.map((x: { name: string }) => x.name), ['ops'])
      assert.equal((await f.call('PUT', `/groups/${gid}/users/nobody`)).status, 404)
      assert.equal((await f.call('POST', '/groups', { body: { group: { name: 'ops' } } })).status, 409)
      assert.equal((await f.call('PATCH', `/groups/${gid}`, { body: { group: { description: 'Ops team' } } })).body.group.description, 'Ops team')
      assert.deepEqual((await f.call('GET', '/groups?name=ops')).body.groups.map((x: { id: string }) => x.id), [gid])
      assert.equal((await f.call('DELETE', `/groups/${gid}/users/${u.id}`)).status, 204)
      assert.equal((await f.call('DELETE', `/groups/${gid}/users/${u.id}`)).status, 404)
      assert.equal((await f.call('DELETE', `/groups/${gid}`)).status, 204)
      assert.equal((await f.call('GET', `/groups/${gid}`)).status, 404)
    })

    it('manages global and domain-specific roles and implied roles', async () => {
      const r = await f.call('POST', '/roles', { body: { role: { name: 'auditor', description: 'reads logs' } } })
      assert.equal(r.status, 201)
      assert.deepEqual([r.body.role.name, r.body.role.domain_id, r.body.role.options], ['auditor', null, {}])
      const local = (await f.call('POST', '/roles', { body: { role: { name: 'auditor', domain_id: 'default' } } }))
      assert.equal(local.status, 201, 'the same name may exist once globally and once per domain')
      assert.equal(local.body.role.domain_id, 'default')
      assert.equal((await f.call('POST', '/roles', { body: { role: { name: 'auditor' } } })).status, 409)
      const globals = (await f.call('GET', '/roles')).body.roles.map((x: { name: string }) => x.name)
      assert.deepEqual(globals, ['admin', 'auditor', 'member', 'reader'], 'lists global roles unless domain_id is given')
      assert.deepEqual((await f.call('GET', '/roles?domain_id=default')).body.roles.map((x: { id: string }) => x.id), [local.body.role.id])
      assert.deepEqual((await f.call('GET', '/roles?name=auditor')).body.roles.map((x: { id: string }) => x.id), [r.body.role.id])

      const auditor = r.body.role.id
      const reader = await roleId(f, 'reader')
      const imply = await f.call('PUT', `/roles/${auditor}/implies/${reader}`)
      assert.equal(imply.status, 201)
      assert.deepEqual([imply.body.role_inference.prior_role.id, imply.body.role_inference.implies.id], [auditor, reader])
      assert.equal((await f.call('GET', `/roles/${auditor}/implies/${reader}`)).status, 200)
      assert.equal((await f.call('HEAD', `/roles/${auditor}/implies/${reader}`)).status, 204)
      assert.deepEqual((await f.call('GET', `/roles/${auditor}/implies`)).body.role_inference.implies.map((x: { name: string }) => x.name), ['reader'])
      const inferences = (await f.call('GET', '/role_inferences')).body.role_inferences
      assert.ok(inferences.some((i: { prior_role: { name: string }; implies: { name: string }[] }) => i.prior_role.name === 'admin' && i.implies[0].name === 'member'))
      assert.equal((await f.call('PUT', `/roles/${reader}/implies/${auditor}`)).status, 400, 'a cycle is refused')
      assert.equal((await f.call('PUT', `/roles/${auditor}/implies/${local.body.role.id}`)).status, 403, 'a global role cannot imply a domain role')
      assert.equal((await f.call('DELETE', `/roles/${auditor}/implies/${reader}`)).status, 204)
      assert.equal((await f.call('GET', `/roles/${auditor}/implies/${reader}`)).status, 404)

      const other = (await f.call('POST', '/domains', { body: { domain: { name: 'role-dom' } } })).body.domain
      const otherProject = (await f.call('POST', '/projects', { body: { project: { name: 'rp', domain_id: other.id } } })).body.project
      const homeProject = (await f.call('POST', '/projects', { body: { project: { name: 'rp-home' } } })).body.project
      const admin = f.server.bootstrap.adminUserId
      assert.equal((await f.call('PUT', `/projects/${homeProject.id}/users/${admin}/roles/${local.body.role.id}`)).status, 204, 'a domain role inside its domain')
      const outside = await f.call('PUT', `/projects/${otherProject.id}/users/${admin}/roles/${local.body.role.id}`)
      assert.equal(outside.status, 403, 'a domain role outside its domain')
      assert.match(errorMessage(outside), /specific to domain/)
      assert.equal((await f.call('PATCH', `/roles/${auditor}`, { body: { role: { description: 'audits' } } })).body.role.description, 'audits')
      assert.equal((await f.call('DELETE', `/roles/${auditor}`)).status, 204)
      assert.equal((await f.call('GET', `/roles/${auditor}`)).status, 404)
    })

    it('grants roles and lists role assignments with every filter, names, effective and subtree', async () => {
      const top = (await f.call('POST', '/projects', { body: { project: { name: 'ra-top' } } })).body.project
      const sub = (await f.call('POST', '/projects', { body: { project: { name: 'ra-sub', parent_id: top.id } } })).body.project
      const u = (await f.call('POST', '/users', { body: { user: { name: 'erin' } } })).body.user
      const g = (await f.call('POST', '/groups', { body: { group: { name: 'ra-group' } } })).body.group
      await f.call('PUT', `/groups/${g.id}/users/${u.id}`)
      const [admin, member, reader] = [await roleId(f, 'admin'), await roleId(f, 'member'), await roleId(f, 'reader')]

      assert.equal((await f.call('PUT', `/projects/${top.id}/users/${u.id}/roles/${member}`)).status, 204)
      assert.equal((await f.call('PUT', `/projects/${top.id}/users/${u.id}/roles/${member}`)).status, 204, 'granting twice is fine')
      assert.equal((await f.call('PUT', `/projects/${sub.id}/groups/${g.id}/roles/${admin}`)).status, 204)
      assert.equal((await f.call('PUT', `/domains/default/users/${u.id}/roles/${reader}`)).status, 204)
      assert.equal((await f.call('PUT', `/system/users/${u.id}/roles/${reader}`)).status, 204)
      assert.equal((await f.call('HEAD', `/projects/${top.id}/users/${u.id}/roles/${member}`)).status, 204)
      assert.equal((await f.call('GET', `/system/users/${u.id}/roles/${reader}`)).status, 204)
      assert.equal((await f.call('HEAD', `/projects/${top.id}/users/${u.id}/roles/${admin}`)).status, 404)
      assert.equal((await f.call('PUT', `/projects/${top.id}/users/${u.id}/roles/nope`)).status, 404)
      assert.equal((await f.call('PUT', `/projects/nope/users/${u.id}/roles/${member}`)).status, 404)
      assert.equal((await f.call('PUT', `/projects/${top.id}/users/nope/roles/${member}`)).status, 404)
      assert.deepEqual((await f.call('GET', `/projects/${top.id}/users/${u.id}/roles`)).body.roles.map((x: { name: string }) => x.name), ['member'])
      assert.deepEqual((await f.call('GET', `/system/users/${u.id}/roles`)).body.roles.map((x: { name: string }) => x.name), ['reader'])

      const list = async (q: string) => {
        const res = await f.call('GET', `/role_assignments?${q}`)
        assert.equal(res.status, 200, JSON.stringify(res.body))
        return res.body.role_assignments as { role: { id: string; name?: string }; user?: { id: string; name?: string; domain?: { id: string; name: string } }; group?: { id: string }; scope: Record<string, { id?: string; name?: string; all?: boolean }>; links: Record<string, string> }[]
      }
      const direct = await list(`user.id=${u.id}`)
      assert.equal(direct.length, 3, 'project, domain and system grants of the user')
      const onTop = direct.find((a) => a.scope.project?.id === top.id)!
      assert.deepEqual(onTop.role, { id: member })
      assert.equal(onTop.links.assignment, `${f.base}/projects/${top.id}/users/${u.id}/roles/${member}`)
      assert.ok(direct.some((a) => a.scope.system?.all === true))
      assert.ok(direct.some((a) => a.scope.domain?.id === 'default'))

      assert.deepEqual((await list(`group.id=${g.id}`)).map((a) => [a.group?.id, a.scope.project?.id, a.role.id]), [[g.id, sub.id, admin]])
      assert.equal((await list(`scope.project.id=${top.id}`)).length, 1)
      assert.deepEqual(await list('scope.project.id=unknown'), [], 'a filter on an unknown project lists nothing')
      assert.equal((await list(`scope.project.id=${top.id}&include_subtree=true`)).length, 2)
      assert.ok((await list('scope.system=all')).every((a) => a.scope.system?.all === true))
      assert.ok((await list('scope.domain.id=default')).every((a) => a.scope.domain?.id === 'default'))
      assert.ok((await list(`role.id=${reader}`)).every((a) => a.role.id === reader))

      const effective = await list(`user.id=${u.id}&scope.project.id=${sub.id}&effective`)
      assert.deepEqual(effective.map((a) => a.role.id).sort(), [admin, member, reader].sort(), 'group grant expanded and implied roles added')
      const viaGroup = effective.find((a) => a.role.id === admin)!
      assert.equal(viaGroup.user?.id, u.id)
      assert.equal(viaGroup.links.membership, `${f.base}/groups/${g.id}/users/${u.id}`)
      assert.equal(effective.find((a) => a.role.id === member)!.links.prior_role, `${f.base}/roles/${admin}`)

      const named = await list(`user.id=${u.id}&scope.project.id=${top.id}&include_names=1`)
      assert.deepEqual(named[0].role, { id: member, name: 'member' })
      assert.deepEqual(named[0].user, { id: u.id, name: 'erin', domain: { id: 'default', name: 'Default' } })
      assert.deepEqual(named[0].scope.project, { id: top.id, name: 'ra-top', domain: { id: 'default', name: 'Default' } })

      for (const bad of [`group.id=${g.id}&effective`, 'scope.project.id=x&scope.domain.id=y', 'include_subtree=1']) {
        const res = await f.call('GET', `/role_assignments?${bad}`)
        assert.equal(res.status, 400, bad)
        errorMessage(res)
      }

      assert.equal((await f.call('DELETE', `/projects/${top.id}/users/${u.id}/roles/${member}`)).status, 204)
      assert.equal((await f.call('DELETE', `/projects/${top.id}/users/${u.id}/roles/${member}`)).status, 404)
      assert.equal((await f.call('DELETE', `/system/users/${u.id}/roles/${reader}`)).status, 204)
      assert.equal((await list(`user.id=${u.id}`)).length, 1)
      const mine = await f.call('GET', `/users/${u.id}/projects`)
      assert.deepEqual(mine.body.projects.map((x: { name: string }) => x.name), ['ra-sub'], 'projects through the group remain')
    })

    it('manages regions, services and endpoints with filters', async () => {
      const region = await f.call('POST', '/regions', { body: { region: { id: 'RegionTwo', description: 'second' } } })
      assert.equal(region.status, 201)
      assert.deepEqual(region.body.region, { id: 'RegionTwo', description: 'second', parent_region_id: null, links: { self: `${f.base}/regions/RegionTwo` } })
      assert.equal((await f.call('POST', '/regions', { body: { region: { id: 'RegionTwo' } } })).status, 409)
      const childRegion = await f.call('POST', '/regions', { body: { region: { parent_region_id: 'RegionTwo' } } })
      assert.equal(childRegion.status, 201)
      assert.match(childRegion.body.region.id, /^[0-9a-f]{32}$/)
      assert.deepEqual((await f.call('GET', '/regions?parent_region_id=RegionTwo')).body.regions.map((x: { id: string }) => x.id), [childRegion.body.region.id])
      assert.equal((await f.call('PATCH', `/regions/RegionTwo`, { body: { region: { parent_region_id: childRegion.body.region.id } } })).status, 400, 'no cycles')

      const svc = await f.call('POST', '/services', { body: { service: { type: 'dns', name: 'designate', description: 'DNS' } } })
      assert.equal(svc.status, 201)
      const sid = svc.body.service.id
      assert.deepEqual([svc.body.service.type, svc.body.service.name, svc.body.service.enabled], ['dns', 'designate', true])
      assert.deepEqual((await f.call('GET', '/services?type=dns')).body.services.map((x: { id: string }) => x.id), [sid])
      assert.ok((await f.call('GET', '/services')).body.services.some((x: { type: string }) => x.type === 'identity'))

      const ep = await f.call('POST', '/endpoints', { body: { endpoint: { service_id: sid, interface: 'public', url: 'http://dns.example.com:9001', region_id: 'RegionTwo' } } })
      assert.equal(ep.status, 201)
      assert.deepEqual(
        [ep.body.endpoint.interface, ep.body.endpoint.region_id, ep.body.endpoint.region, ep.body.endpoint.url, ep.body.endpoint.enabled],
        ['public', 'RegionTwo', 'RegionTwo', 'http://dns.example.com:9001', true],
      )
      await f.call('POST', '/endpoints', { body: { endpoint: { service_id: sid, interface: 'internal', url: 'http://dns.internal:9001', region_id: 'RegionTwo' } } })
      assert.equal((await f.call('GET', `/endpoints?service_id=${sid}`)).body.endpoints.length, 2)
      assert.equal((await f.call('GET', `/endpoints?service_id=${sid}&interface=internal`)).body.endpoints.length, 1)
      assert.equal((await f.call('GET', '/endpoints?region_id=RegionTwo')).body.endpoints.length, 2)
      const badEp = await f.call('POST', '/endpoints', { body: { endpoint: { service_id: sid, interface: 'sideways', url: 'http://x' } } })
      assert.equal(badEp.status, 400)
      assert.match(errorMessage(badEp), /endpoint\/interface/)
      assert.equal((await f.call('POST', '/endpoints', { body: { endpoint: { service_id: 'nope', interface: 'public', url: 'http://x' } } })).status, 400)
      assert.equal((await f.call('PATCH', `/endpoints/${ep.body.endpoint.id}`, { body: { endpoint: { enabled: false } } })).body.endpoint.enabled, false)
      assert.equal((await f.call('DELETE', '/regions/RegionTwo')).status, 409, 'region still used')

      assert.equal((await f.call('DELETE', `/services/${sid}`)).status, 204)
      assert.equal((await f.call('GET', `/endpoints/${ep.body.endpoint.id}`)).status, 404, 'endpoints go with their service')
      assert.equal((await f.call('DELETE', `/regions/${childRegion.body.region.id}`)).status, 204)
      assert.equal((await f.call('DELETE', '/regions/RegionTwo')).status, 204)
      assert.equal((await f.call('GET', '/regions/RegionTwo')).status, 404)
    })

    it('rejects bad input with a 400 naming the field and changes nothing', async () => {
      const db = f.server.deps.store.db
      const counts = async () => ({
        projects: (await db.selectFrom('projects').select('id').execute()).length,
        users: (await db.selectFrom('users').select('id').execute()).length,
      })
      const before = await counts()
      const cases: [string, string, unknown, RegExp][] = [
        ['POST', '/projects', { project: { name: 'x', enabled: 'yes' } }, /project\/enabled/],
        ['POST', '/projects', { project: { name: 123 } }, /project\/name/],
        ['POST', '/projects', { project: { name: 'n'.repeat(65) } }, /project\/name/],
        ['POST', '/projects', { project: { name: '' } }, /project\/name/],
        ['POST', '/projects', { project: { name: 'x', tags: ['a,b'] } }, /project\/tags\/0/],
        ['POST', '/projects', { project: { name: 'x', options: { bogus: true } } }, /project\/options\/bogus/],
        ['POST', '/projects', { name: 'x' }, /project/],
        ['POST', '/users', { user: { name: 'u'.repeat(256) } }, /user\/name/],
        ['POST', '/users', { user: { name: 'x', options: { multi_factor_auth_rules: [['password', 'password']] } } }, /multi_factor_auth_rules/],
        ['POST', '/users', { user: { name: 'x', options: { not_an_option: true } } }, /user\/options\/not_an_option/],
        ['POST', '/users', { user: { name: 'x', password: 12345678 } }, /user\/password/],
        ['POST', '/projects', { project: { name: 'x', parent_id: 'nope' } }, /parent_id/],
        ['POST', '/projects', { project: { name: 'x', is_domain: true, domain_id: 'default' } }, /is_domain/],
      ]
      for (const [method, path, body, field] of cases) {
        const res = await f.call(method, path, { body })
        assert.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body)} → ${res.status}`)
        assert.match(errorMessage(res), field)
      }
      const malformed = await f.call('POST', '/projects', { raw: '{"project": ' })
      assert.equal(malformed.status, 400)
      errorMessage(malformed)
      const admin = f.server.bootstrap.adminUserId
      assert.equal((await f.call('PATCH', `/users/${admin}`, { body: { user: { enabled: 'false' } } })).status, 400)
      assert.equal((await f.call('GET', `/users/${admin}`)).body.user.enabled, true)
      assert.deepEqual(await counts(), before)
    })

    it('answers 404 for every unknown id in updates, deletes, grants and membership', async () => {
      const member = await roleId(f, 'member')
      const admin = f.server.bootstrap.adminUserId
      const project = f.server.bootstrap.adminProjectId
      const cases: [string, string, unknown?][] = [
        ['PATCH', '/projects/nope', { project: { description: 'x' } }],
        ['PATCH', '/users/nope', { user: { description: 'x' } }],
        ['PATCH', '/groups/nope', { group: { description: 'x' } }],
        ['PATCH', '/roles/nope', { role: { description: 'x' } }],
        ['PATCH', '/domains/nope', { domain: { description: 'x' } }],
        ['PATCH', '/services/nope', { service: { description: 'x' } }],
        ['PATCH', '/endpoints/nope', { endpoint: { enabled: false } }],
        ['PATCH', '/regions/nope', { region: { description: 'x' } }],
        ['DELETE', '/users/nope'],
        ['DELETE', '/groups/nope'],
        ['DELETE', '/roles/nope'],
        ['DELETE', '/domains/nope'],
        ['DELETE', '/services/nope'],
        ['DELETE', '/endpoints/nope'],
        ['DELETE', '/regions/nope'],
        ['GET', '/projects/nope/tags'],
        ['GET', '/users/nope/projects'],
        ['GET', '/users/nope/groups'],
        ['GET', '/groups/nope/users'],
        ['PUT', `/groups/nope/users/${admin}`],
        ['PUT', `/domains/nope/users/${admin}/roles/${member}`],
        ['PUT', `/domains/default/groups/nope/roles/${member}`],
        ['PUT', `/system/groups/nope/roles/${member}`],
        ['DELETE', `/system/users/${admin}/roles/${member}`],
        ['HEAD', `/projects/${project}/groups/nope/roles/${member}`],
        ['PUT', `/roles/nope/implies/${member}`],
        ['GET', `/roles/${member}/implies/nope`],
        ['POST', '/users/nope/password', { user: { original_password: 'a', password: 'b' } }],
      ]
      for (const [method, path, body] of cases) {
        const res = await f.call(method, path, { body, token: path.endsWith('/password') ? null : undefined })
        const expected = path.endsWith('/password') ? 401 : 404
        assert.equal(res.status, expected, `${method} ${path}`)
        if (method !== 'HEAD') errorMessage(res)
      }
    })

    it('grants to groups on the system and domains, and answers HEAD checks', async () => {
      const g = (await f.call('POST', '/groups', { body: { group: { name: 'sys-group' } } })).body.group
      const reader = await roleId(f, 'reader')
      assert.equal((await f.call('PUT', `/system/groups/${g.id}/roles/${reader}`)).status, 204)
      assert.equal((await f.call('HEAD', `/system/groups/${g.id}/roles/${reader}`)).status, 204)
      assert.equal((await f.call('PUT', `/domains/default/groups/${g.id}/roles/${reader}`)).status, 204)
      assert.deepEqual((await f.call('GET', `/domains/default/groups/${g.id}/roles`)).body.roles.map((r: { name: string }) => r.name), ['reader'])
      const listed = (await f.call('GET', `/role_assignments?group.id=${g.id}`)).body.role_assignments
      assert.deepEqual(listed.map((a: { scope: Record<string, unknown> }) => Object.keys(a.scope)[0]).sort(), ['domain', 'system'])
      assert.equal((await f.call('DELETE', `/system/groups/${g.id}/roles/${reader}`)).status, 204)
      assert.equal((await f.call('HEAD', `/system/groups/${g.id}/roles/${reader}`)).status, 404)
      assert.equal((await f.call('DELETE', `/groups/${g.id}`)).status, 204)
      assert.equal((await f.call('GET', `/role_assignments?group.id=${g.id}`)).body.role_assignments.length, 0, 'grants go with the group')
    })

    it('rejects bad updates without changing the record', async () => {
      const p = (await f.call('POST', '/projects', { body: { project: { name: 'stable', description: 'keep' } } })).body.project
      for (const body of [{ project: { name: 'x'.repeat(65) } }, { project: { enabled: 1 } }, { project: { description: 5 } }, { project: { tags: 'a' } }, {}]) {
        const res = await f.call('PATCH', `/projects/${p.id}`, { body })
        assert.equal(res.status, 400, JSON.stringify(body))
        assert.match(errorMessage(res), /project/)
      }
      assert.equal((await f.call('PATCH', `/projects/${p.id}`, { body: { project: {} } })).status, 200, 'an empty update is a no-op')
      assert.deepEqual((await f.call('GET', `/projects/${p.id}`)).body.project, p)
      const wrongMethod = await f.call('GET', `/users/${f.server.bootstrap.adminUserId}/password`)
      assert.equal(wrongMethod.status, 405)
      errorMessage(wrongMethod)
    })

    it('answers 401 without a token, 404 for unknown routes and ids, 405 for wrong methods, all as identity errors', async () => {
      const noToken = await f.call('GET', '/projects', { token: null })
      assert.equal(noToken.status, 401)
      assert.match(noToken.headers.get('www-authenticate') ?? '', /^Keystone uri="/)
      errorMessage(noToken)
      assert.equal((await f.call('GET', '/projects', { token: 'garbage-token-'.repeat(6) })).status, 401)
      for (const path of ['/projects/nope', '/users/nope', '/groups/nope', '/roles/nope', '/domains/nope', '/services/nope', '/endpoints/nope', '/regions/nope']) {
        const res = await f.call('GET', path)
        assert.equal(res.status, 404, path)
        errorMessage(res)
      }
      const unknown = await f.call('GET', '/no-such-collection')
      assert.equal(unknown.status, 404)
      errorMessage(unknown)
      const wrong = await f.call('PUT', '/projects')
      assert.equal(wrong.status, 405)
      errorMessage(wrong)
      assert.match(wrong.headers.get('allow') ?? '', /POST/)
    })
  })
}

async function roleId(f: Fixture, name: string): Promise<string> {
  const res = await f.call('GET', `/roles?name=${name}`)
  return res.body.roles[0].id
}
