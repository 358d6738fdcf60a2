/**
 * The contract between the admin writes and token validation: a new password (set by an admin or changed by the
 * user) stamps password_created_at, and tokens issued before it stop validating. The admin half writes the
 * stamp; the check lives in token validation (the auth half), so this test passes once both halves are merged.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { startFixture, type Fixture } from './fixture.js'

describe('a password change invalidates older tokens', () => {
  let f: Fixture
  let userId: string
  let projectId: string
  before(async () => {
    f = await startFixture('sqlite')
    projectId = (await f.call('POST', '/projects', { body: { project: { name: 'pw' } } })).body.project.id
    userId = (await f.call('POST', '/users', { body: { user: { name: 'pw-user', password: 'first-password' } } })).body.user.id
    const reader = (await f.call('GET', '/roles?name=reader')).body.roles[0].id
    await f.call('PUT', `/projects/${projectId}/users/${userId}/roles/${reader}`)
  })
  after(() => f.close())

  const selfStatus = async (token: string) => (await f.call('GET', `/users/${userId}`, { token })).status

  it('when an admin sets a new password', async () => {
    const token = await f.tokenFor(userId, { p: projectId })
    assert.equal(await selfStatus(token), 200)
    await new Promise((r) => setTimeout(r, 5))
    assert.equal((await f.call('PATCH', `/users/${userId}`, { body: { user: { password: 'second-password' } } })).status, 200)
    assert.equal(await selfStatus(token), 401)
    await new Promise((r) => setTimeout(r, 5))
    assert.equal(await selfStatus(await f.tokenFor(userId, { p: projectId })), 200, 'tokens issued after the change work')
  })

  it('when the user changes its own password', async () => {
    const token = await f.tokenFor(userId, { p: projectId })
    assert.equal(await selfStatus(token), 200)
    await new Promise((r) => setTimeout(r, 5))
    const res = await f.call('POST', `/users/${userId}/password`, { token: null, body: { user: { original_password: 'second-password', password: 'third-password' } } })
    assert.equal(res.status, 204)
    assert.equal(await selfStatus(token), 401)
  })
})
