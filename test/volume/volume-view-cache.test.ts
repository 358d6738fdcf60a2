/**
 * GET /volumes/{id} answers kept views (http/view-cache.ts) stamped with the volume's revisions (migration
 * 0128). Whatever changes what a volume shows — its row (name, status, metadata), its attachments, its type's name,
 * its storage host's name — through the API or written straight into the database as another process would, the
 * show must answer it at once and agree with the detail list (which renders every time), at old and new
 * microversions, for members and admins; a kept view never answers another project, nor a member the admin's
 * fields. Each show is read twice: once to fill the cache, once from it.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { AppError } from '../../src/contracts/errors.js'
import { DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { adminSession, call, eventually, projectSession, type Session } from '../image/support.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any

const V = '/volume/v3'
const VERSIONS = ['3.0', '3.60']

for (const dialect of DIALECTS) {
  describe(`volume show from kept views (${dialect})`, { timeout: 300_000 }, () => {
    let server: TestServer
    let admin: Session
    let alice: Session
    let bob: Session

    const version = (v: string) => ({ 'openstack-api-version': `volume ${v}` })

    /** The volume as show answers it at `v`, read twice (fill, then hit). */
    async function shown(who: Session, id: string, v: string, on = server): Promise<Json> {
      let found: Json
      for (let i = 0; i < 2; i++) {
        const reply = await call(on, who, 'GET', `${V}/volumes/${id}`, undefined, version(v))
        assert.equal(reply.status, 200, JSON.stringify(reply.body))
        assert.equal(reply.headers.get('content-type'), 'application/json; charset=utf-8')
        found = reply.body.volume
      }
      return found
    }

    /** Show agrees with the detail list (rendered every time) for alice and the admin at every version. */
    async function agree(id: string, what: string): Promise<Json> {
      let member: Json
      for (const v of VERSIONS) {
        for (const who of [alice, admin]) {
          const view = await shown(who, id, v)
          const list = await call(server, who, 'GET', `${V}/volumes/detail${who === admin ? '?all_tenants=1' : ''}`, undefined, version(v))
          assert.deepEqual(view, list.body.volumes.find((x: Json) => x.id === id), `after ${what}, ${v}, ${who === admin ? 'admin' : 'member'}`)
          if (who === alice) member = view
        }
      }
      return member
    }

    async function newVolume(extra: Record<string, unknown> = {}): Promise<string> {
      const created = await call(server, alice, 'POST', `${V}/volumes`, { volume: { size: 1, ...extra } })
      assert.equal(created.status, 202, JSON.stringify(created.body))
      const id = created.body.volume.id as string
      await eventually(async () => (await call(server, alice, 'GET', `${V}/volumes/${id}`)).body.volume.status === 'available', 10_000, `volume ${id} available`)
      return id
    }

    before(async () => {
      server = await startTestServer({ dialect })
      admin = await adminSession(server)
      alice = await projectSession(server)
      bob = await projectSession(server)
    })
    after(() => server.close())

    it('answers every change of the row, its attachments, its type and its host at once', async () => {
      const type = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: `gold-${dialect}` } })
      assert.equal(type.status, 200, JSON.stringify(type.body))
      const id = await newVolume({ name: 'kept', volume_type: `gold-${dialect}` })
      assert.equal((await agree(id, 'create')).volume_type, `gold-${dialect}`)

      assert.equal((await call(server, alice, 'PUT', `${V}/volumes/${id}`, { volume: { name: 'renamed' } })).status, 200)
      assert.equal((await agree(id, 'rename')).name, 'renamed')
      assert.equal((await call(server, alice, 'POST', `${V}/volumes/${id}/metadata`, { metadata: { colour: 'blue' } })).status, 200)
      assert.deepEqual((await agree(id, 'metadata')).metadata, { colour: 'blue' })

      // Written straight into the database, as another process or an older release would.
      const db = server.deps.store.db
      await db.updateTable('volumes').set({ status: 'in-use' }).where('id', '=', id).execute()
      assert.equal((await agree(id, 'a status change in the database')).status, 'in-use')
      const attachment = randomUUID()
      await db
        .insertInto('volume_attachments')
        .values({ id: attachment, volume_id: id, server_id: randomUUID(), attach_status: 'attached', attach_mode: 'rw', device: '/dev/vdb', host_name: null, delete_on_termination: 0, attached_at: Date.now(), created_at: Date.now(), host_id: null, connection_info: null, attached_by: 'cinder' })
        .execute()
      assert.equal((await agree(id, 'an attachment')).attachments[0].device, '/dev/vdb')
      await db.updateTable('volume_attachments').set({ device: '/dev/vdc' }).where('id', '=', attachment).execute()
      assert.equal((await agree(id, 'an attachment change')).attachments[0].device, '/dev/vdc')
      await db.deleteFrom('volume_attachments').where('id', '=', attachment).execute()
      assert.deepEqual((await agree(id, 'a detach')).attachments, [])
      await db.updateTable('volume_types').set({ name: `platinum-${dialect}` }).where('id', '=', type.body.volume_type.id).execute()
      assert.equal((await agree(id, 'a type rename')).volume_type, `platinum-${dialect}`)

      // The storage host's name, shown to admins in os-vol-host-attr:host.
      const hostId = randomUUID()
      const now = Date.now()
      await db
        .insertInto('hosts')
        .values({
          id: hostId, hostname: `store-${dialect}`, kind: 'agent', driver: 'qemu', availability_zone: 'nova', cell: 'cell1', ip_addresses: '[]', facts: '{}', vcpus: 1, memory_mb: 1, disk_gb: 1,
          cpu_allocation_ratio: 1, ram_allocation_ratio: 1, disk_allocation_ratio: 1, vcpus_used: 0, memory_mb_used: 0, disk_gb_used: 0, running_vms: 0, service_status: 'enabled',
          disabled_reason: null, forced_down: 0, last_heartbeat_at: null, created_at: now, updated_at: now,
        })
        .execute()
      await db.updateTable('volumes').set({ location: hostId }).where('id', '=', id).execute()
      await agree(id, 'a move to a storage host')
      assert.match((await shown(admin, id, '3.0'))['os-vol-host-attr:host'], new RegExp(`^store-${dialect}@`))
      await db.updateTable('hosts').set({ hostname: `renamed-${dialect}` }).where('id', '=', hostId).execute()
      await agree(id, 'a host rename')
      assert.match((await shown(admin, id, '3.0'))['os-vol-host-attr:host'], new RegExp(`^renamed-${dialect}@`))
      await db.updateTable('volumes').set({ location: null, status: 'available' }).where('id', '=', id).execute()
      await db.deleteFrom('hosts').where('id', '=', hostId).execute()
    })

    it('never answers another project, nor a member the admin fields, nor one microversion another', async () => {
      const id = await newVolume({ name: 'private' })
      assert.ok('os-vol-host-attr:host' in (await shown(admin, id, '3.0')))
      assert.equal('os-vol-host-attr:host' in (await shown(alice, id, '3.0')), false)
      assert.equal('group_id' in (await shown(alice, id, '3.0')), false)
      assert.ok('group_id' in (await shown(alice, id, '3.60')))
      assert.equal('group_id' in (await shown(alice, id, '3.0')), false)
      for (let i = 0; i < 2; i++) {
        const theirs = await call(server, bob, 'GET', `${V}/volumes/${id}`)
        assert.equal(theirs.status, 404, JSON.stringify(theirs.body))
        assert.equal(theirs.body.itemNotFound.code, 404)
      }
      assert.equal((await call(server, alice, 'GET', `${V}/volumes/${randomUUID()}`)).status, 404)
      assert.equal((await call(server, alice, 'DELETE', `${V}/volumes/${id}`)).status, 202)
      await eventually(async () => (await call(server, alice, 'GET', `${V}/volumes/${id}`)).status === 404, 10_000, 'volume gone')
    })

    it("raises the row's own rev for its own changes, the view revision only for other rows", async () => {
      const id = await newVolume({ name: 'counters' })
      const db = server.deps.store.db
      const counters = async () => {
        const row = await db.selectFrom('volumes').select('rev').where('id', '=', id).executeTakeFirstOrThrow()
        const view = await db.selectFrom('view_revisions').select('rev').where('kind', '=', 'volume').where('id', '=', id).executeTakeFirst()
        return { rev: row.rev, viewRev: view?.rev ?? 0 }
      }
      const before = await counters()
      await db.updateTable('volumes').set({ name: 'counted' }).where('id', '=', id).execute()
      assert.deepEqual(await counters(), { rev: before.rev + 1, viewRev: before.viewRev }, 'an update of the row: once, and only its rev')
      await db
        .insertInto('volume_attachments')
        .values({ id: randomUUID(), volume_id: id, server_id: randomUUID(), attach_status: 'reserved', attach_mode: 'rw', device: null, host_name: null, delete_on_termination: 0, attached_at: null, created_at: Date.now(), host_id: null, connection_info: null, attached_by: 'cinder' })
        .execute()
      assert.deepEqual(await counters(), { rev: before.rev + 1, viewRev: before.viewRev + 1 }, 'an attachment: only the view revision')
      await db.deleteFrom('volume_attachments').where('volume_id', '=', id).execute()
      await db.deleteFrom('volumes').where('id', '=', id).execute()
      assert.equal((await db.selectFrom('view_revisions').select('rev').where('kind', '=', 'volume').where('id', '=', id).execute()).length, 0, 'the view revision goes with the row')
    })

    if (dialect === 'postgres') {
      // Writers that change a volume's row and its attachments lock the row first (storage/row-locks.ts). Without
      // that, a reserve (row, then a new attachment's view revision) and a completion or detach (an attachment's
      // view revision, then the row) deadlock (40P01), as metadata writers did when the row's own update raised the
      // view revision too. Conflicts the API defines (400: being attached elsewhere) are tried again, as Nova does.
      it('lets concurrent attaches, detaches and metadata writers of one volume all finish; show is current after', async () => {
        const type = await call(server, admin, 'POST', `${V}/types`, { volume_type: { name: 'shared-race', extra_specs: { multiattach: '<is> True' } } })
        assert.equal(type.status, 200, JSON.stringify(type.body))
        const id = await newVolume({ volume_type: 'shared-race' })
        const { volumes } = server.deps.volumeServices
        const db = server.deps.store.db
        const inTx = <T>(fn: (tx: typeof db) => Promise<T>) => db.transaction().execute(fn)
        const keeper = randomUUID()
        await inTx((tx) => volumes.reserveForAttach(tx, { volumeId: id, projectId: alice.projectId, serverId: keeper }))
        await inTx((tx) => volumes.attach(tx, { volumeId: id, serverId: keeper }))
        assert.equal((await shown(alice, id, '3.60')).attachments.length, 1, 'kept before the race')

        /** Reserve (the volume is attaching meanwhile, 400 for the others: they wait and try again), complete, detach. */
        const attacher = async (rounds: number) => {
          const serverId = randomUUID()
          for (let round = 0; round < rounds; round++) {
            for (let tries = 0; ; tries++) {
              try {
                await inTx((tx) => volumes.reserveForAttach(tx, { volumeId: id, projectId: alice.projectId, serverId }))
                break
              } catch (err) {
                if (!(err instanceof AppError && err.status === 400) || tries > 400) throw err
                await new Promise((r) => setTimeout(r, 2 + Math.random() * 5))
              }
            }
            await inTx((tx) => volumes.attach(tx, { volumeId: id, serverId }))
            await inTx((tx) => volumes.beginDetach(tx, { volumeId: id, serverId }))
            await inTx((tx) => volumes.rollDetaching(tx, { volumeId: id, serverId }))
            await inTx((tx) => volumes.beginDetach(tx, { volumeId: id, serverId }))
            await inTx((tx) => volumes.detach(tx, { volumeId: id, serverId }))
          }
        }
        /** Merges a key of its own, and completes the keeper's attachment again (an attachment, then the row). */
        const writer = async (n: number, rounds: number) => {
          for (let round = 0; round < rounds; round++) {
            const reply = await call(server, alice, 'POST', `${V}/volumes/${id}/metadata`, { metadata: { [`w${n}`]: String(round) } })
            assert.equal(reply.status, 200, JSON.stringify(reply.body))
            await inTx((tx) => volumes.attach(tx, { volumeId: id, serverId: keeper }))
          }
        }
        await Promise.all([...[0, 1, 2, 3].map(() => attacher(4)), ...[0, 1, 2, 3].map((n) => writer(n, 12))])

        const after = await agree(id, 'the race')
        assert.equal(after.status, 'in-use')
        assert.deepEqual(
          after.attachments.map((a: Json) => a.server_id),
          [keeper],
        )
        assert.deepEqual(after.metadata, { w0: '11', w1: '11', w2: '11', w3: '11' }, 'no merge lost')
      })

      it('answers in one process what another process changed', async () => {
        const masterKey = readFileSync(join(server.dataDir, 'master.key'), 'utf8').trim()
        const other = await startTestServer({ databaseUrl: server.config.databaseUrl, env: { PCC_MASTER_KEY: masterKey, PCC_SIMULATED_HOSTS: '0' } })
        try {
          const id = await newVolume({ name: 'two-processes' })
          assert.deepEqual(await shown(alice, id, '3.60', other), await shown(alice, id, '3.60'))
          assert.equal((await call(other, alice, 'PUT', `${V}/volumes/${id}`, { volume: { name: 'changed-in-other' } })).status, 200)
          assert.equal((await agree(id, 'a rename in the other process')).name, 'changed-in-other')
          assert.equal((await call(server, alice, 'PUT', `${V}/volumes/${id}`, { volume: { name: 'changed-here' } })).status, 200)
          assert.equal((await shown(alice, id, '3.60', other)).name, 'changed-here')
        } finally {
          await other.close()
        }
      })
    }
  })
}
