/**
 * The bootstrap: on first start the Default domain, admin project and user, roles admin ⊃ member ⊃ reader,
 * admin's assignments, RegionOne and the catalog from PCC_PUBLIC_URL; idempotent on every later start, and
 * endpoints follow a changed public URL. On PostgreSQL, replicas starting at once on an empty database agree.
 */
import { after, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { CATALOG_SERVICES } from '../../src/server/bootstrap/catalog.js'
import { loadConfig } from '../../src/server/config/load.js'
import { verifyPassword } from '../../src/server/crypto/passwords.js'
import { createLogger } from '../../src/server/logger.js'
import { startServer } from '../../src/server/runtime.js'
import type { Store } from '../../src/server/storage/store.js'
import { openStore } from '../../src/server/storage/store.js'
import { ADMIN_PASSWORD, DIALECTS, startTestServer } from '../../src/testkit/harness.js'
import { freshDatabase } from '../../src/testkit/postgres.js'
import { spawnServer } from '../../src/testkit/process.js'
import { tempDirs } from '../../src/testkit/temp-dirs.js'

const temp = tempDirs('pcc-boot-')
after(temp.removeAll)

const SERVICE_TYPES = ['identity', 'compute', 'network', 'volumev3', 'block-storage', 'image', 'resmgr']
const PATHS: Record<string, string> = {
  identity: '/identity/v3',
  compute: '/compute/v2.1',
  network: '/network',
  volumev3: '/volume/v3',
  'block-storage': '/volume/v3',
  image: '/image',
  resmgr: '/resmgr',
}

/** Everything the bootstrap owns, in a form two snapshots can be compared by. */
async function snapshot(store: Store) {
  const db = store.db
  const domains = await db.selectFrom('domains').select(['id', 'name', 'enabled']).execute()
  const projects = await db.selectFrom('projects').select(['id', 'name', 'domain_id']).execute()
  const users = await db.selectFrom('users').select(['id', 'name', 'domain_id', 'default_project_id', 'password_hash', 'enabled']).execute()
  const roles = await db.selectFrom('roles').select(['id', 'name', 'domain_id']).orderBy('name').execute()
  const implied = await db
    .selectFrom('implied_roles')
    .innerJoin('roles as prior', 'prior.id', 'implied_roles.prior_role_id')
    .innerJoin('roles as implied', 'implied.id', 'implied_roles.implied_role_id')
    .select(['prior.name as prior', 'implied.name as implied'])
    .orderBy('prior.name')
    .execute()
  const assignments = await db
    .selectFrom('role_assignments')
    .innerJoin('roles', 'roles.id', 'role_assignments.role_id')
    .select(['actor_type', 'actor_id', 'target_type', 'target_id', 'roles.name as role', 'inherited'])
    .orderBy('target_type')
    .execute()
  const regions = await db.selectFrom('regions').select('id').execute()
  const endpoints = await db
    .selectFrom('endpoints')
    .innerJoin('services', 'services.id', 'endpoints.service_id')
    .select(['endpoints.id', 'services.id as service_id', 'services.type', 'endpoints.interface', 'endpoints.region_id', 'endpoints.url', 'endpoints.enabled'])
    .orderBy('services.type')
    .orderBy('endpoints.interface')
    .execute()
  const services = await db.selectFrom('services').select(['id', 'type', 'name', 'enabled']).orderBy('type').execute()
  return { domains, projects, users, roles, implied, assignments, regions, services, endpoints }
}

function assertBootstrapped(s: Awaited<ReturnType<typeof snapshot>>, publicUrl: string): void {
  assert.deepEqual(s.domains, [{ id: 'default', name: 'Default', enabled: 1 }])
  assert.equal(s.projects.length, 1)
  assert.equal(s.projects[0].name, 'admin')
  assert.equal(s.projects[0].domain_id, 'default')
  assert.equal(s.users.length, 1)
  const [admin] = s.users
  assert.equal(admin.name, 'admin')
  assert.equal(admin.domain_id, 'default')
  assert.equal(admin.enabled, 1)
  assert.deepEqual(s.roles.map((r) => [r.name, r.domain_id]), [['admin', ''], ['member', ''], ['reader', '']])
  assert.deepEqual(s.implied, [{ prior: 'admin', implied: 'member' }, { prior: 'member', implied: 'reader' }])
  const projectAdmin = s.assignments.find((a) => a.target_type === 'project')
  assert.deepEqual(projectAdmin, { actor_type: 'user', actor_id: admin.id, target_type: 'project', target_id: s.projects[0].id, role: 'admin', inherited: 0 })
  assert.ok(s.assignments.every((a) => a.actor_id === admin.id && a.role === 'admin'))
  assert.deepEqual(s.regions, [{ id: 'RegionOne' }])
  assert.deepEqual(s.services.map((x) => x.type).sort(), [...SERVICE_TYPES].sort())
  assert.ok(s.services.every((x) => x.enabled === 1))
  for (const type of SERVICE_TYPES) {
    const mine = s.endpoints.filter((e) => e.type === type)
    assert.deepEqual(mine.map((e) => e.interface), ['admin', 'internal', 'public'], `${type}: one endpoint per interface`)
    for (const e of mine) {
      assert.equal(e.url, `${publicUrl}${PATHS[type]}`, `${type} ${e.interface} URL`)
      assert.equal(e.region_id, 'RegionOne')
      assert.equal(e.enabled, 1)
    }
  }
  assert.equal(s.endpoints.length, SERVICE_TYPES.length * 3)
}

describe('catalog table', () => {
  it('lists exactly the services the bootstrap is specified to create', () => {
    assert.deepEqual(CATALOG_SERVICES.map((s) => s.type).sort(), [...SERVICE_TYPES].sort())
    for (const s of CATALOG_SERVICES) assert.equal(s.path, PATHS[s.type])
  })
})

for (const dialect of DIALECTS) {
  describe(`bootstrap (${dialect})`, () => {
    it('creates everything on first start, changes nothing on the second, and moves endpoints when the public URL changes', async () => {
      const dataDir = temp.make()
      const databaseUrl = dialect === 'postgres' ? await freshDatabase() : ''
      const urlA = 'https://cloud-a.example.com:8443'
      const first = await startTestServer({ dataDir, databaseUrl, env: { PCC_PUBLIC_URL: urlA } })
      const one = await snapshot(first.deps.store)
      assert.equal(first.bootstrap.generatedAdminPassword, undefined, 'a given password is not generated')
      assert.equal(first.bootstrap.adminUserId, one.users[0].id)
      assert.equal(first.bootstrap.adminProjectId, one.projects[0].id)
      await first.stop()
      assertBootstrapped(one, urlA)
      assert.equal(await verifyPassword(ADMIN_PASSWORD, one.users[0].password_hash!), true)

      const second = await startTestServer({ dataDir, databaseUrl, env: { PCC_PUBLIC_URL: urlA } })
      const two = await snapshot(second.deps.store)
      await second.stop()
      assert.deepEqual(two, one, 'a second start changes nothing')

      const urlB = 'http://10.0.0.5:9000'
      const third = await startTestServer({ dataDir, databaseUrl, env: { PCC_PUBLIC_URL: urlB, PCC_ADMIN_PASSWORD: 'a-new-admin-password' } })
      const three = await snapshot(third.deps.store)
      await third.close()
      assertBootstrapped(three, urlB)
      assert.deepEqual(three.endpoints.map((e) => e.id), one.endpoints.map((e) => e.id), 'endpoints are moved, not duplicated')
      assert.deepEqual(three.services, one.services)
      assert.equal(three.users[0].id, one.users[0].id)
      assert.equal(await verifyPassword('a-new-admin-password', three.users[0].password_hash!), true, 'a password given at start becomes the admin password')
    })

    it('generates an admin password when none is given, and only on the first start', async () => {
      const dataDir = temp.make()
      const databaseUrl = dialect === 'postgres' ? await freshDatabase() : ''
      const config = loadConfig({ argv: [], env: { PCC_LISTEN: '127.0.0.1:0', PCC_DATA_DIR: dataDir, PCC_DATABASE_URL: databaseUrl } })
      const a = await startServer(config, createLogger('silent'))
      await a.stop()
      const generated = a.bootstrap.generatedAdminPassword
      assert.ok(generated && generated.length >= 16)
      const b = await startServer(config, createLogger('silent'))
      const users = await b.deps.store.db.selectFrom('users').select('password_hash').execute()
      await b.stop()
      assert.equal(b.bootstrap.generatedAdminPassword, undefined)
      assert.equal(users.length, 1)
      assert.equal(await verifyPassword(generated, users[0].password_hash!), true, 'the second start kept the generated password')
    })
  })
}

describe('bootstrap of replicas starting together (postgres)', () => {
  it('three pcc-server processes started at once on an empty database all become ready, with one admin', async () => {
    const databaseUrl = await freshDatabase()
    const env = (i: number) => ({
      PCC_DATABASE_URL: databaseUrl,
      PCC_DATA_DIR: temp.make(`pcc-replica-${i}-`),
      PCC_LISTEN: '127.0.0.1:0',
      PCC_MASTER_KEY: Buffer.alloc(32, 42).toString('base64'),
      PCC_PUBLIC_URL: 'http://cloud.example.com',
      PCC_LOG_LEVEL: 'warn',
    })
    const replicas = [1, 2, 3].map((i) => spawnServer(env(i)))
    try {
      const urls = await Promise.all(replicas.map((r) => r.listening(60_000)))
      for (const url of urls) {
        let status = 0
        for (let i = 0; i < 100 && status !== 200; i++) {
          status = await fetch(`${url}/readyz`).then((r) => r.status, () => 0)
          if (status !== 200) await sleep(100)
        }
        assert.equal(status, 200, `${url} is ready`)
      }
      const printed = replicas.filter((r) => /OS_PASSWORD=/.test(r.stdout()))
      assert.equal(printed.length, 1, 'exactly one replica created the admin and printed its password')
    } finally {
      for (const r of replicas) assert.equal(await r.stop(), 0, `stderr: ${r.stderr()}`)
    }
    const store = await openStore({ dataDir: '/nonexistent', databaseUrl })
    try {
      assertBootstrapped(await snapshot(store), 'http://cloud.example.com')
      // What every start seeds exists once: the default image, each standard metadata namespace.
      const images = await store.db.selectFrom('images').select('name').where('visibility', '=', 'public').execute()
      assert.equal(images.length, 1, `one default image: ${JSON.stringify(images)}`)
      const namespaces = await store.db.selectFrom('metadef_namespaces').select('namespace').execute()
      assert.equal(new Set(namespaces.map((n) => n.namespace)).size, namespaces.length)
    } finally {
      await store.close()
    }
  })
})
