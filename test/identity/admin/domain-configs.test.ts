import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../../src/testkit/harness.js'
import { errorMessage, startFixture, type Fixture } from './fixture.js'

for (const dialect of DIALECTS) {
  describe(`identity domain configuration (${dialect})`, () => {
    let f: Fixture
    let domainId: string
    const ldap = { url: 'ldap://ldap.example.org:389/', user_tree_dn: 'ou=Users,dc=example,dc=org' }
    before(async () => {
      f = await startFixture(dialect)
      domainId = (await f.call('POST', '/domains', { body: { domain: { name: 'configured' } } })).body.domain.id
    })
    after(() => f.close())

    it('serves the defaults of the identity and ldap groups and their options', async () => {
      const all = await f.call('GET', '/domains/config/default')
      assert.equal(all.status, 200)
      assert.equal(all.body.config.identity.driver, 'sql')
      assert.ok('list_limit' in all.body.config.identity)
      assert.ok('user_tree_dn' in all.body.config.ldap)
      assert.ok(!('password' in all.body.config.ldap))
      assert.deepEqual((await f.call('GET', '/domains/config/identity/default')).body.config, { identity: { driver: 'sql', list_limit: null } })
      assert.deepEqual((await f.call('GET', '/domains/config/ldap/url/default')).body.config, { url: 'ldap://localhost' })
      assert.equal((await f.call('GET', '/domains/config/assignment/default')).status, 403)
      assert.equal((await f.call('GET', '/domains/config/ldap/nope/default')).status, 403)
    })

    it('creates, shows, updates and deletes a configuration, its groups and options', async () => {
      assert.equal((await f.call('GET', `/domains/${domainId}/config`)).status, 404)
      const created = await f.call('PUT', `/domains/${domainId}/config`, { body: { config: { identity: { driver: 'ldap' }, ldap: { ...ldap, password: 'bind-secret' } } } })
      assert.equal(created.status, 201)
      // The LDAP password is kept (sealed) but never answered.
      assert.deepEqual(created.body.config, { identity: { driver: 'ldap' }, ldap })
      const row = await f.server.deps.store.db.selectFrom('domain_configs').selectAll().where('domain_id', '=', domainId).executeTakeFirstOrThrow()
      assert.ok(!row.config.includes('bind-secret') && row.sensitive !== null && !row.sensitive.includes('bind-secret'))
      assert.equal((await f.call('GET', `/domains/${domainId}/config/ldap/password`)).status, 404)

      assert.deepEqual((await f.call('GET', `/domains/${domainId}/config`)).body.config, { identity: { driver: 'ldap' }, ldap })
      assert.deepEqual((await f.call('GET', `/domains/${domainId}/config/ldap`)).body.config, { ldap })
      assert.deepEqual((await f.call('GET', `/domains/${domainId}/config/ldap/url`)).body.config, { url: ldap.url })

      const patched = await f.call('PATCH', `/domains/${domainId}/config`, { body: { config: { ldap: { url: 'ldap://other/' } } } })
      assert.equal(patched.status, 200)
      assert.deepEqual(patched.body.config, { identity: { driver: 'ldap' }, ldap: { ...ldap, url: 'ldap://other/' } })
      const group = await f.call('PATCH', `/domains/${domainId}/config/identity`, { body: { config: { identity: { driver: 'sql', list_limit: 7 } } } })
      assert.deepEqual(group.body.config.identity, { driver: 'sql', list_limit: 7 })
      const option = await f.call('PATCH', `/domains/${domainId}/config/identity/driver`, { body: { config: { driver: 'custom' } } })
      assert.equal(option.body.config.identity.driver, 'custom')

      assert.equal((await f.call('DELETE', `/domains/${domainId}/config/identity/driver`)).status, 204)
      assert.equal((await f.call('GET', `/domains/${domainId}/config/identity/driver`)).status, 404)
      assert.equal((await f.call('DELETE', `/domains/${domainId}/config/identity`)).status, 204)
      assert.equal((await f.call('GET', `/domains/${domainId}/config/identity`)).status, 404)
      // Replacing answers 200.
      assert.equal((await f.call('PUT', `/domains/${domainId}/config`, { body: { config: { ldap } } })).status, 200)
      assert.equal((await f.call('DELETE', `/domains/${domainId}/config`)).status, 204)
      assert.equal((await f.call('GET', `/domains/${domainId}/config`)).status, 404)
      assert.equal((await f.call('DELETE', `/domains/${domainId}/config`)).status, 404)
    })

    it('refuses unknown groups and options, mismatched bodies and missing domains, and changes nothing', async () => {
      await f.call('PUT', `/domains/${domainId}/config`, { body: { config: { ldap } } })
      const refusals: [string, string, unknown, number][] = [
        ['PUT', `/domains/${domainId}/config`, { config: { assignment: { driver: 'sql' } } }, 403],
        ['PUT', `/domains/${domainId}/config`, { config: { ldap: { not_an_option: 1 } } }, 403],
        ['PUT', `/domains/${domainId}/config`, { config: {} }, 403],
        ['PUT', `/domains/${domainId}/config`, { config: { ldap: 'x' } }, 400],
        ['PUT', `/domains/${domainId}/config`, { nope: 1 }, 400],
        ['PATCH', `/domains/${domainId}/config/ldap`, { config: { identity: { driver: 'x' } } }, 400],
        ['PATCH', `/domains/${domainId}/config/identity`, { config: { identity: { driver: 'x' } } }, 404],
        ['PATCH', `/domains/${domainId}/config/ldap/url`, { config: { url: 'a', user: 'b' } }, 400],
        ['PATCH', `/domains/${domainId}/config/ldap/user`, { config: { user: 'b' } }, 404],
        ['PUT', '/domains/no-such-domain/config', { config: { ldap } }, 404],
      ]
      for (const [method, path, body, status] of refusals) {
        const reply = await f.call(method, path, { body })
        assert.equal(reply.status, status, `${method} ${path} ${JSON.stringify(body)}`)
        assert.ok(errorMessage(reply))
      }
      assert.deepEqual((await f.call('GET', `/domains/${domainId}/config`)).body.config, { ldap })
    })

    it('is for admins only, and goes with its domain', async () => {
      const userId = (await f.call('POST', '/users', { body: { user: { name: 'config-reader', domain_id: 'default' } } })).body.user.id
      const projectId = (await f.call('POST', '/projects', { body: { project: { name: 'config-project', domain_id: 'default' } } })).body.project.id
      const memberRole = (await f.call('GET', '/roles?name=member')).body.roles[0].id
      assert.equal((await f.call('PUT', `/projects/${projectId}/users/${userId}/roles/${memberRole}`)).status, 204)
      const member = await f.tokenFor(userId, { p: projectId })
      assert.equal((await f.call('GET', `/domains/${domainId}/config`, { token: member })).status, 403)
      assert.equal((await f.call('PUT', `/domains/${domainId}/config`, { token: member, body: { config: { ldap: { url: 'ldap://evil/' } } } })).status, 403)
      assert.equal((await f.call('GET', '/domains/config/default', { token: member })).status, 403)
      assert.equal((await f.call('GET', `/domains/${domainId}/config`, { token: null })).status, 401)
      assert.deepEqual((await f.call('GET', `/domains/${domainId}/config`)).body.config, { ldap })

      await f.call('PATCH', `/domains/${domainId}`, { body: { domain: { enabled: false } } })
      assert.equal((await f.call('DELETE', `/domains/${domainId}`)).status, 204)
      const left = await f.server.deps.store.db.selectFrom('domain_configs').select('domain_id').where('domain_id', '=', domainId).execute()
      assert.equal(left.length, 0)
    })
  })
}
