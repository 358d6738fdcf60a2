import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { DIALECTS } from '../../../src/testkit/harness.js'
import { errorMessage, startFixture, type Fixture } from './fixture.js'

for (const dialect of DIALECTS) {
  describe(`identity policy blobs and OAuth consumers (${dialect})`, () => {
    let f: Fixture
    let memberToken: string
    before(async () => {
      f = await startFixture(dialect)
      const userId = (await f.call('POST', '/users', { body: { user: { name: 'plain-member', domain_id: 'default' } } })).body.user.id
      const projectId = (await f.call('POST', '/projects', { body: { project: { name: 'plain-project', domain_id: 'default' } } })).body.project.id
      const memberRole = (await f.call('GET', '/roles?name=member')).body.roles[0].id
      await f.call('PUT', `/projects/${projectId}/users/${userId}/roles/${memberRole}`)
      memberToken = await f.tokenFor(userId, { p: projectId })
    })
    after(() => f.close())

    it('creates, lists (by type), shows, updates and deletes policy blobs, keeping extra attributes', async () => {
      const created = await f.call('POST', '/policies', { body: { policy: { type: 'application/json', blob: '{"default": ""}', owner: 'ops' } } })
      assert.equal(created.status, 201)
      const p = created.body.policy
      assert.deepEqual({ type: p.type, blob: p.blob, owner: p.owner }, { type: 'application/json', blob: '{"default": ""}', owner: 'ops' })
      assert.equal(p.links.self, `${f.base}/policies/${p.id}`)
      const other = (await f.call('POST', '/policies', { body: { policy: { type: 'text/yaml', blob: 'x: y' } } })).body.policy

      assert.deepEqual((await f.call('GET', '/policies')).body.policies.map((x: { id: string }) => x.id), [p.id, other.id])
      assert.deepEqual((await f.call('GET', '/policies?type=text/yaml')).body.policies.map((x: { id: string }) => x.id), [other.id])
      const updated = await f.call('PATCH', `/policies/${p.id}`, { body: { policy: { type: 'application/yaml' } } })
      assert.equal(updated.status, 200)
      assert.deepEqual({ type: updated.body.policy.type, blob: updated.body.policy.blob, owner: updated.body.policy.owner }, { type: 'application/yaml', blob: '{"default": ""}', owner: 'ops' })
      assert.equal((await f.call('GET', `/policies/${p.id}`)).body.policy.type, 'application/yaml')
      assert.equal((await f.call('DELETE', `/policies/${p.id}`)).status, 204)
      assert.equal((await f.call('GET', `/policies/${p.id}`)).status, 404)
      assert.equal((await f.call('DELETE', `/policies/${p.id}`)).status, 404)
    })

    it('refuses bad policy bodies and non-admins, changing nothing', async () => {
      for (const body of [{ policy: { type: 'x' } }, { policy: { blob: 'x' } }, { policy: { type: 5, blob: 'x' } }, { policy: { type: '', blob: 'x' } }, {}]) {
        const reply = await f.call('POST', '/policies', { body })
        assert.equal(reply.status, 400, JSON.stringify(body))
        assert.ok(errorMessage(reply))
      }
      const kept = (await f.call('POST', '/policies', { body: { policy: { type: 't', blob: 'b' } } })).body.policy
      assert.equal((await f.call('PATCH', `/policies/${kept.id}`, { body: { policy: { blob: 7 } } })).status, 400)
      assert.equal((await f.call('POST', '/policies', { token: memberToken, body: { policy: { type: 't', blob: 'b' } } })).status, 403)
      assert.equal((await f.call('GET', '/policies', { token: memberToken })).status, 403)
      assert.equal((await f.call('DELETE', `/policies/${kept.id}`, { token: memberToken })).status, 403)
      assert.equal((await f.call('GET', '/policies', { token: null })).status, 401)
      assert.equal((await f.call('GET', `/policies/${kept.id}`)).body.policy.blob, 'b')
    })

    it('creates a consumer with a secret shown once (sealed at rest), lists, shows, updates and deletes it', async () => {
      const created = await f.call('POST', '/OS-OAUTH1/consumers', { body: { consumer: { description: 'a partner' } } })
      assert.equal(created.status, 201)
      const c = created.body.consumer
      assert.ok(c.secret.length >= 32)
      assert.equal(c.description, 'a partner')
      assert.equal(c.links.self, `${f.base}/OS-OAUTH1/consumers/${c.id}`)
      const row = await f.server.deps.store.db.selectFrom('oauth_consumers').select('secret').where('id', '=', c.id).executeTakeFirstOrThrow()
      assert.ok(!row.secret.includes(c.secret))
      const shown = await f.call('GET', `/OS-OAUTH1/consumers/${c.id}`)
      assert.deepEqual(shown.body.consumer, { id: c.id, description: 'a partner', links: c.links })
      assert.ok((await f.call('GET', '/OS-OAUTH1/consumers')).body.consumers.some((x: { id: string; secret?: string }) => x.id === c.id && x.secret === undefined))
      assert.equal((await f.call('POST', '/OS-OAUTH1/consumers', { body: { consumer: {} } })).status, 201)

      const updated = await f.call('PATCH', `/OS-OAUTH1/consumers/${c.id}`, { body: { consumer: { description: 'renamed' } } })
      assert.equal(updated.status, 200)
      assert.equal(updated.body.consumer.description, 'renamed')
      const secretChange = await f.call('PATCH', `/OS-OAUTH1/consumers/${c.id}`, { body: { consumer: { secret: 'mine' } } })
      assert.equal(secretChange.status, 400)
      assert.match(errorMessage(secretChange), /secret/)
      assert.equal((await f.call('PATCH', `/OS-OAUTH1/consumers/${c.id}`, { body: { consumer: { description: 5 } } })).status, 400)
      assert.equal((await f.call('PATCH', `/OS-OAUTH1/consumers/${c.id}`, { token: memberToken, body: { consumer: { description: 'x' } } })).status, 403)
      assert.equal((await f.call('GET', `/OS-OAUTH1/consumers/${c.id}`)).body.consumer.description, 'renamed')
      assert.equal((await f.call('GET', '/OS-OAUTH1/consumers', { token: memberToken })).status, 403)
      assert.equal((await f.call('POST', '/OS-OAUTH1/consumers', { token: memberToken, body: { consumer: {} } })).status, 403)

      assert.equal((await f.call('DELETE', `/OS-OAUTH1/consumers/${c.id}`, { token: memberToken })).status, 403)
      assert.equal((await f.call('DELETE', `/OS-OAUTH1/consumers/${c.id}`)).status, 204)
      assert.equal((await f.call('GET', `/OS-OAUTH1/consumers/${c.id}`)).status, 404)
    })
  })
}
