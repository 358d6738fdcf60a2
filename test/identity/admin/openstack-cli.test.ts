/**
 * End to end with the real `openstack` client (python3-openstackclient): project, user and role commands
 * against a fresh server, each result checked. The client logs in through POST /identity/v3/auth/tokens and
 * version discovery, which the identity auth routes provide.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startTestServer, type TestServer } from '../../../src/testkit/harness.js'
import { adminEnv, openstack, openstackJson } from '../../../src/testkit/openstack.js'
import { verifyPassword } from '../../../src/server/crypto/passwords.js'

type Row = Record<string, unknown>

describe('openstack CLI against the identity admin API', () => {
  let server: TestServer
  let env: Record<string, string>
  before(async () => {
    server = await startTestServer({ publicUrlFromListen: true })
    env = adminEnv(server)
  })
  after(() => server.close())

  it('project create/list/show/set/delete', async () => {
    const created = await openstackJson<Row>(['project', 'create', 'e2e-proj', '--domain', 'default', '--description', 'first', '--tag', 'blue'], env)
    assert.equal(created.name, 'e2e-proj')
    assert.equal(created.domain_id, 'default')
    assert.equal(created.description, 'first')
    assert.equal(created.enabled, true)
    assert.deepEqual(created.tags, ['blue'])
    const id = created.id as string

    const list = await openstackJson<Row[]>(['project', 'list'], env)
    assert.deepEqual(list.filter((p) => p.Name === 'e2e-proj').map((p) => p.ID), [id])
    const long = await openstackJson<Row[]>(['project', 'list', '--long', '--domain', 'default'], env)
    assert.equal(long.find((p) => p.ID === id)?.Description, 'first')

    const set = await openstack(['project', 'set', 'e2e-proj', '--description', 'second', '--disable'], env)
    assert.equal(set.code, 0, set.stderr)
    const shown = await openstackJson<Row>(['project', 'show', 'e2e-proj'], env)
    assert.deepEqual([shown.id, shown.description, shown.enabled], [id, 'second', false])

    const dup = await openstack(['project', 'create', 'e2e-proj', '--domain', 'default'], env)
    assert.notEqual(dup.code, 0)
    assert.match(dup.stderr, /409|Conflict|same name/i)

    const del = await openstack(['project', 'delete', 'e2e-proj'], env)
    assert.equal(del.code, 0, del.stderr)
    const gone = await openstack(['project', 'show', id], env)
    assert.notEqual(gone.code, 0)
    assert.match(gone.stderr, /No project with a name or ID|could not be found|404/i)
  })

  it('user create/list/set --password, role add/remove, role assignment list --names', async () => {
    const project = await openstackJson<Row>(['project', 'create', 'team', '--domain', 'default'], env)
    const user = await openstackJson<Row>(['user', 'create', 'e2e-user', '--domain', 'default', '--password', 'first-pass', '--project', 'team', '--email', 'e2e@example.com'], env)
    assert.equal(user.name, 'e2e-user')
    assert.equal(user.default_project_id, project.id)
    assert.equal(user.email, 'e2e@example.com')
    assert.equal(user.enabled, true)
    assert.equal(user.password, undefined)

    const users = await openstackJson<Row[]>(['user', 'list'], env)
    assert.deepEqual(users.filter((u) => u.Name === 'e2e-user').map((u) => u.ID), [user.id])

    const db = server.deps.store.db
    const before = await db.selectFrom('users').selectAll().where('id', '=', user.id as string).executeTakeFirstOrThrow()
    const set = await openstack(['user', 'set', 'e2e-user', '--password', 'second-pass'], env)
    assert.equal(set.code, 0, set.stderr)
    const afterSet = await db.selectFrom('users').selectAll().where('id', '=', user.id as string).executeTakeFirstOrThrow()
    assert.ok(await verifyPassword('second-pass', afterSet.password_hash!))
    assert.ok(afterSet.password_created_at! > before.password_created_at!)

    const mfa = await openstack(['user', 'set', 'e2e-user', '--enable-multi-factor-auth', '--multi-factor-auth-rule', 'password,totp', '--ignore-lockout-failure-attempts'], env)
    assert.equal(mfa.code, 0, mfa.stderr)
    const shown = await openstackJson<Row>(['user', 'show', 'e2e-user'], env)
    assert.deepEqual(shown.options, { multi_factor_auth_enabled: true, multi_factor_auth_rules: [['password', 'totp']], ignore_lockout_failure_attempts: true })

    const add = await openstack(['role', 'add', '--user', 'e2e-user', '--project', 'team', 'member'], env)
    assert.equal(add.code, 0, add.stderr)
    const assignments = await openstackJson<Row[]>(['role', 'assignment', 'list', '--user', 'e2e-user', '--project', 'team', '--names'], env)
    assert.equal(assignments.length, 1)
    assert.equal(assignments[0].Role, 'member')
    assert.equal(assignments[0].User, 'e2e-user@Default')
    assert.equal(assignments[0].Project, 'team@Default')

    const effective = await openstackJson<Row[]>(['role', 'assignment', 'list', '--user', 'e2e-user', '--effective', '--names'], env)
    assert.deepEqual(effective.map((a) => a.Role).sort(), ['member', 'reader'], 'member implies reader')

    const remove = await openstack(['role', 'remove', '--user', 'e2e-user', '--project', 'team', 'member'], env)
    assert.equal(remove.code, 0, remove.stderr)
    assert.deepEqual(await openstackJson<Row[]>(['role', 'assignment', 'list', '--user', 'e2e-user', '--names'], env), [])
  })

  it('domain, group, implied role, service, endpoint and region commands', async () => {
    const dom = await openstackJson<Row>(['domain', 'create', 'e2e-dom', '--description', 'e2e'], env)
    assert.deepEqual([dom.name, dom.enabled, dom.description], ['e2e-dom', true, 'e2e'])
    const enabledDelete = await openstack(['domain', 'delete', 'e2e-dom'], env)
    assert.notEqual(enabledDelete.code, 0, 'an enabled domain cannot be deleted')
    assert.equal((await openstack(['domain', 'set', '--disable', 'e2e-dom'], env)).code, 0)
    assert.equal((await openstackJson<Row>(['domain', 'show', 'e2e-dom'], env)).enabled, false)
    assert.equal((await openstack(['domain', 'delete', 'e2e-dom'], env)).code, 0)
    assert.ok(!(await openstackJson<Row[]>(['domain', 'list'], env)).some((d) => d.Name === 'e2e-dom'))

    const group = await openstackJson<Row>(['group', 'create', 'e2e-group', '--domain', 'default'], env)
    assert.equal(group.name, 'e2e-group')
    const added = await openstack(['group', 'add', 'user', 'e2e-group', 'admin'], env)
    assert.equal(added.code, 0, added.stderr)
    const contains = await openstack(['group', 'contains', 'user', 'e2e-group', 'admin'], env)
    assert.equal(contains.code, 0, contains.stderr)
    assert.match(contains.stdout + contains.stderr, /admin in group e2e-group/)
    assert.deepEqual((await openstackJson<Row[]>(['group', 'list', '--user', 'admin'], env)).map((g) => g.Name), ['e2e-group'])

    const role = await openstackJson<Row>(['role', 'create', 'e2e-role'], env)
    assert.equal(role.name, 'e2e-role')
    const implied = await openstack(['implied', 'role', 'create', 'e2e-role', '--implied-role', 'reader'], env)
    assert.equal(implied.code, 0, implied.stderr)
    const rules = await openstackJson<Row[]>(['implied', 'role', 'list'], env)
    assert.ok(rules.some((r) => r['Prior Role Name'] === 'e2e-role' && r['Implied Role Name'] === 'reader'), JSON.stringify(rules))
    assert.equal((await openstack(['role', 'add', '--group', 'e2e-group', '--domain', 'default', 'e2e-role'], env)).code, 0)
    const byGroup = await openstackJson<Row[]>(['role', 'assignment', 'list', '--group', 'e2e-group', '--names'], env)
    assert.deepEqual(byGroup.map((a) => [a.Role, a.Group, a.Domain]), [['e2e-role', 'e2e-group@Default', 'Default']])

    const services = await openstackJson<Row[]>(['service', 'list'], env)
    assert.ok(services.some((x) => x.Type === 'identity' && x.Name === 'keystone'))
    const endpoints = await openstackJson<Row[]>(['endpoint', 'list', '--service', 'identity', '--interface', 'public'], env)
    assert.equal(endpoints.length, 1)
    assert.equal(endpoints[0].URL, `${server.url}/identity/v3`)
    assert.equal(endpoints[0].Region, 'RegionOne')
    const regions = await openstackJson<Row[]>(['region', 'list'], env)
    assert.ok(regions.some((r) => r.Region === 'RegionOne'))
  })
})
