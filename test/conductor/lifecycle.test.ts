/**
 * The server lifecycle as a user sees it: servers created with `POST /servers`, actions started with
 * `POST /servers/{id}/action` and `DELETE`, every state traced through `GET /servers/{id}` at 2.96 (status,
 * OS-EXT-STS vm/task/power state, progress, fault, launched/terminated), the instance actions and their events
 * through `os-instance-actions`, on the simulated driver, with failures injected into it. The expected
 * sequences come from the state map and action table (docs/compute.md, "States and actions") and
 * docs/conductor.md (progress). The store is read only for what no API shows: claims (allocations) and guests.
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ADMIN_PASSWORD, DIALECTS, startTestServer, type TestServer } from '../../src/testkit/harness.js'
import { ComputeClient, inParallel, login } from '../../src/testkit/compute-api.js'
import { capacityProblems, checkSequence, traceServerApi, type ExpectedState } from '../../src/testkit/compute-trace.js'

/**
 * Base duration of a simulated operation. Every state in which the hypervisor works lasts at least this long,
 * several times one GET of the server on a loaded machine, so the trace sees it (at 100 ms, CI on a busy 2-core
 * machine once missed the 100 ms networking step). States in which no hypervisor work happens (the API's start task
 * state, scheduling) are marked optional.
 */
const DELAY_MS = 250
const TIME_FORMAT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type View = Record<string, any>

const idle = (v: View | undefined) => !!v && v['OS-EXT-STS:task_state'] === null && v.status !== 'BUILD'
const gone = (v: View | undefined) => v === undefined

/** The create sequence (docs/compute.md, "States and actions"; progress stays 0: docs/conductor.md, "Lifecycle"). */
const BUILD: ExpectedState[] = [
  { status: 'BUILD', vm: 'building', task: 'scheduling', power: 0, optional: true },
  { status: 'BUILD', vm: 'building', task: null, power: 0, optional: true },
  { status: 'BUILD', vm: 'building', task: 'networking', power: 0, progress: 0 },
  { status: 'BUILD', vm: 'building', task: 'block_device_mapping', power: 0, progress: 0 },
  { status: 'BUILD', vm: 'building', task: 'spawning', power: 0, progress: 0 },
  { status: 'ACTIVE', vm: 'active', task: null, power: 1, progress: 0 },
]

const ACTIVE: ExpectedState = { status: 'ACTIVE', vm: 'active', task: null, power: 1 }
const SHUTOFF: ExpectedState = { status: 'SHUTOFF', vm: 'stopped', task: null, power: 4 }
const state = (status: string, vm: string, task: string | null, more: Partial<ExpectedState> = {}): ExpectedState => ({ status, vm, task, ...more })
const brief = (status: string, vm: string, task: string): ExpectedState => ({ status, vm, task, optional: true })
/** Stands for the second image in an action body (uploaded in `before`). */
const SECOND_IMAGE = '<second image>'

interface ActionCase {
  title: string
  /** The action body: { name: value }. */
  action: [string, unknown]
  /** Actions that bring the server to the starting state first. */
  from?: [string, unknown][]
  /** The states after the API accepted it, through to the resting state. */
  expect: ExpectedState[]
  code: number
  /** The instance action's name and its event, as Nova records them. */
  instanceAction: string
  event: string
}

const CASES: ActionCase[] = [
  { title: 'os-stop', action: ['os-stop', null], expect: [state('ACTIVE', 'active', 'powering-off'), SHUTOFF], code: 202, instanceAction: 'stop', event: 'compute_stop_instance' },
  { title: 'os-start', action: ['os-start', null], from: [['os-stop', null]], expect: [state('SHUTOFF', 'stopped', 'powering-on'), ACTIVE], code: 202, instanceAction: 'start', event: 'compute_start_instance' },
  {
    title: 'soft reboot', action: ['reboot', { type: 'SOFT' }], code: 202, instanceAction: 'reboot', event: 'compute_reboot_instance',
    expect: [brief('REBOOT', 'active', 'rebooting'), state('REBOOT', 'active', 'reboot_pending'), state('REBOOT', 'active', 'reboot_started'), ACTIVE],
  },
  {
    title: 'hard reboot', action: ['reboot', { type: 'HARD' }], code: 202, instanceAction: 'reboot', event: 'compute_reboot_instance',
    expect: [brief('HARD_REBOOT', 'active', 'rebooting_hard'), state('HARD_REBOOT', 'active', 'reboot_pending_hard'), state('HARD_REBOOT', 'active', 'reboot_started_hard'), ACTIVE],
  },
  {
    // REBOOT/HARD_REBOOT are shown only while vm_state is active: a stopped server stays SHUTOFF until it runs.
    title: 'hard reboot of a stopped server', action: ['reboot', { type: 'HARD' }], from: [['os-stop', null]], code: 202, instanceAction: 'reboot', event: 'compute_reboot_instance',
    expect: [brief('SHUTOFF', 'stopped', 'rebooting_hard'), state('SHUTOFF', 'stopped', 'reboot_pending_hard'), state('SHUTOFF', 'stopped', 'reboot_started_hard'), ACTIVE],
  },
  { title: 'pause', action: ['pause', null], expect: [state('ACTIVE', 'active', 'pausing'), state('PAUSED', 'paused', null, { power: 3 })], code: 202, instanceAction: 'pause', event: 'compute_pause_instance' },
  { title: 'unpause', action: ['unpause', null], from: [['pause', null]], expect: [state('PAUSED', 'paused', 'unpausing'), ACTIVE], code: 202, instanceAction: 'unpause', event: 'compute_unpause_instance' },
  { title: 'suspend', action: ['suspend', null], expect: [state('ACTIVE', 'active', 'suspending'), state('SUSPENDED', 'suspended', null, { power: 7 })], code: 202, instanceAction: 'suspend', event: 'compute_suspend_instance' },
  { title: 'resume', action: ['resume', null], from: [['suspend', null]], expect: [state('SUSPENDED', 'suspended', 'resuming'), ACTIVE], code: 202, instanceAction: 'resume', event: 'compute_resume_instance' },
  { title: 'rescue', action: ['rescue', null], expect: [state('ACTIVE', 'active', 'rescuing'), state('RESCUE', 'rescued', null, { power: 1 })], code: 200, instanceAction: 'rescue', event: 'compute_rescue_instance' },
  { title: 'unrescue', action: ['unrescue', null], from: [['rescue', null]], expect: [state('RESCUE', 'rescued', 'unrescuing'), ACTIVE], code: 202, instanceAction: 'unrescue', event: 'compute_unrescue_instance' },
  {
    title: 'rebuild', action: ['rebuild', { imageRef: SECOND_IMAGE }], code: 202, instanceAction: 'rebuild', event: 'compute_rebuild_instance',
    expect: [brief('REBUILD', 'active', 'rebuilding'), state('REBUILD', 'active', 'rebuild_block_device_mapping', { progress: 0 }), state('REBUILD', 'active', 'rebuild_spawning', { progress: 0 }), { ...ACTIVE, progress: 0 }],
  },
  {
    title: 'rebuild of a stopped server', action: ['rebuild', { imageRef: SECOND_IMAGE }], from: [['os-stop', null]], code: 202, instanceAction: 'rebuild', event: 'compute_rebuild_instance',
    expect: [brief('REBUILD', 'stopped', 'rebuilding'), state('REBUILD', 'stopped', 'rebuild_block_device_mapping', { progress: 0 }), state('REBUILD', 'stopped', 'rebuild_spawning', { progress: 0 }), SHUTOFF],
  },
  {
    title: 'createImage', action: ['createImage', { name: 'snap' }], code: 202, instanceAction: 'createImage', event: 'compute_snapshot_instance',
    expect: [brief('ACTIVE', 'active', 'image_snapshot_pending'), state('ACTIVE', 'active', 'image_snapshot'), state('ACTIVE', 'active', 'image_pending_upload'), state('ACTIVE', 'active', 'image_uploading'), ACTIVE],
  },
  { title: 'changePassword', action: ['changePassword', { adminPass: 'n3w-Secret' }], expect: [state('PASSWORD', 'active', 'updating_password'), ACTIVE], code: 202, instanceAction: 'changePassword', event: 'compute_set_admin_password' },
  {
    title: 'cold migrate', action: ['migrate', null], code: 202, instanceAction: 'migrate', event: 'compute_prep_resize',
    expect: [
      brief('RESIZE', 'active', 'resize_prep'), state('RESIZE', 'active', 'resize_migrating', { progress: 0 }), state('RESIZE', 'active', 'resize_migrated', { progress: 0 }),
      state('RESIZE', 'active', 'resize_finish', { progress: 0 }), state('VERIFY_RESIZE', 'resized', null, { power: 1, progress: 0 }),
    ],
  },
  { title: 'confirmResize', action: ['confirmResize', null], from: [['migrate', null]], expect: [state('VERIFY_RESIZE', 'resized', 'resize_confirming'), ACTIVE], code: 204, instanceAction: 'confirmResize', event: 'compute_confirm_resize' },
  { title: 'revertResize', action: ['revertResize', null], from: [['migrate', null]], expect: [state('REVERT_RESIZE', 'resized', 'resize_reverting'), ACTIVE], code: 202, instanceAction: 'revertResize', event: 'compute_revert_resize' },
  { title: 'live migration', action: ['os-migrateLive', { host: null, block_migration: 'auto' }], expect: [state('MIGRATING', 'active', 'migrating'), ACTIVE], code: 202, instanceAction: 'live-migration', event: 'compute_live_migration' },
  {
    title: 'shelve (offloaded at once)', action: ['shelve', null], code: 202, instanceAction: 'shelve', event: 'compute_shelve_instance',
    expect: [
      brief('ACTIVE', 'active', 'shelving'), state('ACTIVE', 'active', 'shelving_image_pending_upload'), state('ACTIVE', 'active', 'shelving_image_uploading'),
      state('ACTIVE', 'active', 'shelving_offloading'), state('SHELVED_OFFLOADED', 'shelved_offloaded', null, { power: 4 }),
    ],
  },
  {
    title: 'unshelve', action: ['unshelve', null], from: [['shelve', null]], code: 202, instanceAction: 'unshelve', event: 'compute_unshelve_instance',
    expect: [brief('SHELVED_OFFLOADED', 'shelved_offloaded', 'unshelving'), state('SHELVED_OFFLOADED', 'shelved_offloaded', 'spawning'), { ...ACTIVE, progress: 0 }],
  },
]

for (const dialect of DIALECTS) {
  describe(`server lifecycle through the compute API on the simulated driver (${dialect})`, () => {
    let server: TestServer
    let api: ComputeClient
    let projectId: string
    let image: string
    let rebuildImage: string
    before(async () => {
      server = await startTestServer({ dialect, env: { PCC_SIMULATED_HOSTS: '2', PCC_SIMULATED_DELAY_MS: String(DELAY_MS), PCC_RECONCILE_SECONDS: '0' } })
      const session = await login(server.url, ADMIN_PASSWORD)
      projectId = session.projectId
      api = new ComputeClient(server.url, session.token)
      await api.unlimitedQuotas(projectId)
      image = await api.bootImage()
      rebuildImage = await uploadImage(api, 'rebuild-image')
    })
    after(() => server?.close())
    const db = () => server.deps.store.db
    const drivers = () => server.deps.conductor.simulatedHosts.map((h) => h.driver)
    const claims = (id: string) => db().selectFrom('allocations').selectAll().where('server_id', '=', id).execute()

    /** POST /servers and trace it to its resting state. */
    async function create(name: string, extra: Record<string, unknown> = {}, hints?: Record<string, unknown>) {
      const created = await api.create({ name, imageRef: image, flavorRef: '1', networks: 'none', ...extra }, hints)
      const traced = await traceServerApi(api, created.id, idle)
      return { ...created, ...traced }
    }

    async function boot(name: string): Promise<string> {
      const { id, final } = await create(name)
      assert.equal(final?.status, 'ACTIVE', `${name} did not boot: ${JSON.stringify(final?.fault)}`)
      return id
    }

    /** Starts an action through the API, checks its answer, and traces the server until it rests. */
    async function act(id: string, name: string, value: unknown, code: number) {
      const reply = await api.action(id, name, value)
      assert.equal(reply.status, code, `${name}: ${JSON.stringify(reply.body)}`)
      const traced = await traceServerApi(api, id, (v) => !!v && v['OS-EXT-STS:task_state'] === null)
      return { reply, ...traced }
    }

    /** The instance action of a request: finished (every event finished) with the expected outcome. */
    async function finishedAction(id: string, requestId: string, name: string, events: [string, string][], message: string | null = null) {
      const action = await api.instanceAction(id, requestId)
      assert.equal(action.action, name)
      assert.equal(action.request_id, requestId)
      assert.equal(action.message, message)
      assert.deepEqual(action.events.map((e: View) => [e.event, e.result]), events)
      for (const e of action.events) {
        assert.match(e.start_time, TIME_FORMAT)
        assert.match(e.finish_time ?? '', TIME_FORMAT, `event ${e.event} finished`)
      }
      const listed = await api.instanceActions(id)
      assert.ok(listed.some((a) => a.request_id === requestId && a.action === name), `${name} is listed`)
      return action
    }

    it('builds through scheduling, networking, block_device_mapping and spawning to ACTIVE', async () => {
      const created = await api.create({ name: 'web', imageRef: image, flavorRef: '1', networks: 'none' })
      // What the API answers before the conductor moves: BUILD, not launched, no host, no fault.
      const first = (await api.server(created.id))!
      assert.equal(first.status, 'BUILD')
      assert.equal(first['OS-SRV-USG:launched_at'], null)
      assert.equal(first['OS-SRV-USG:terminated_at'], null)
      assert.equal(first.fault, undefined)
      const { states, final } = await traceServerApi(api, created.id, idle)
      const wrong = checkSequence(states, BUILD)
      assert.equal(wrong, undefined, wrong)
      assert.match(final!['OS-SRV-USG:launched_at'], TIME_FORMAT)
      assert.ok(Date.parse(`${final!['OS-SRV-USG:launched_at']}Z`) >= Date.parse(final!.created), 'launched after created')
      assert.equal(final!['OS-SRV-USG:terminated_at'], null)
      assert.match(final!['OS-EXT-SRV-ATTR:host'], /^sim-host-\d$/)
      assert.equal(final!['OS-EXT-AZ:availability_zone'], 'nova')
      assert.equal(final!.host_status, 'UP')
      assert.equal(final!.fault, undefined)
      await finishedAction(created.id, created.requestId, 'create', [
        ['conductor_schedule_and_build_instances', 'Success'],
        ['compute__do_build_and_run_instance', 'Success'],
      ])
      // The claim: one allocation of m1.tiny on the host the server runs on.
      const hostId = (await db().selectFrom('hosts').select('id').where('hostname', '=', final!['OS-EXT-SRV-ATTR:host']).executeTakeFirstOrThrow()).id
      assert.deepEqual((await claims(created.id)).map((a) => [a.host_id, a.vcpus, a.memory_mb, a.disk_gb]), [[hostId, 1, 512, 1]])
      assert.deepEqual(await capacityProblems(db()), [])
    })

    for (const c of CASES) {
      const route = c.expect.filter((e) => !e.optional).map((e) => e.status === 'ACTIVE' && e.task === null ? 'ACTIVE' : `${e.status}(${e.task ?? '-'})`)
      it(`${c.title}${c.from ? ` after ${c.from.map(([n]) => n).join(', ')}` : ''}: ${route.join(' → ')}`, async () => {
        const id = await boot(c.title.replace(/\W+/g, '-'))
        for (const [name, value] of c.from ?? []) {
          const pre = await act(id, name, value, name === 'rescue' ? 200 : 202)
          assert.equal(pre.final!['OS-EXT-STS:task_state'], null)
        }
        const before = (await api.server(id))!
        const value = JSON.parse(JSON.stringify(c.action[1]).replaceAll(SECOND_IMAGE, rebuildImage)) as unknown
        const { reply, states, final } = await act(id, c.action[0], value, c.code)
        const wrong = checkSequence(states, c.expect)
        assert.equal(wrong, undefined, wrong)
        assert.equal(final!.fault, undefined, 'no fault')
        await finishedAction(id, reply.requestId, c.instanceAction, [[c.event, 'Success']])

        const host = final!['OS-EXT-SRV-ATTR:host']
        switch (c.action[0]) {
          case 'rescue':
            assert.equal(typeof reply.body.adminPass, 'string', 'rescue answers the rescue password')
            break
          case 'rebuild':
            // 2.75+: the full server view, already in the rebuild's first task state, with the new image.
            assert.equal(reply.body.server.status, 'REBUILD')
            assert.equal(reply.body.server['OS-EXT-STS:task_state'], 'rebuilding')
            assert.equal(final!.image.id, rebuildImage)
            assert.ok(final!['OS-SRV-USG:launched_at'] > before['OS-SRV-USG:launched_at'], 'launched again')
            break
          case 'createImage': {
            const snapshot = await api.other('GET', `/image/v2/images/${reply.body.image_id}`)
            assert.equal(snapshot.status, 200, 'the snapshot image exists')
            break
          }
          case 'migrate':
            assert.notEqual(host, before['OS-EXT-SRV-ATTR:host'], 'moved to the other host')
            assert.equal((await claims(id)).length, 2, 'the source claim is held until confirmResize')
            break
          case 'confirmResize':
            assert.equal((await claims(id)).length, 1, 'confirm frees the source claim')
            break
          case 'revertResize':
            assert.notEqual(host, before['OS-EXT-SRV-ATTR:host'], 'back on the source host')
            assert.equal((await claims(id)).length, 1, 'revert frees the destination claim')
            break
          case 'os-migrateLive':
            assert.notEqual(host, before['OS-EXT-SRV-ATTR:host'], 'moved to the other host')
            break
          case 'shelve':
            assert.equal(host, null, 'offloaded: no host')
            assert.equal((await claims(id)).length, 0, 'offloaded: no claim')
            break
          case 'unshelve':
            assert.match(host, /^sim-host-\d$/, 'placed again')
            break
        }
        if (!['migrate', 'shelve'].includes(c.action[0])) assert.equal((await claims(id)).length, 1, 'one claim')
        assert.deepEqual(await capacityProblems(db()), [])
      })
    }

    it('resizes to a bigger flavor: RESIZE → VERIFY_RESIZE with both claims held, confirm keeps only the new one', async () => {
      const id = await boot('grow')
      const { reply, states, final } = await act(id, 'resize', { flavorRef: '3' }, 202)
      const wrong = checkSequence(states, CASES.find((c) => c.action[0] === 'migrate')!.expect)
      assert.equal(wrong, undefined, wrong)
      assert.equal(final!.flavor.original_name, 'm1.medium')
      await finishedAction(id, reply.requestId, 'resize', [['compute_prep_resize', 'Success']])
      const held = await claims(id)
      assert.equal(held.reduce((n, a) => n + a.vcpus, 0), 1 + 2, 'm1.tiny and m1.medium both held while VERIFY_RESIZE')
      const confirmed = await act(id, 'confirmResize', null, 204)
      assert.equal(confirmed.final!.status, 'ACTIVE')
      assert.equal(confirmed.final!.flavor.original_name, 'm1.medium')
      assert.deepEqual((await claims(id)).map((a) => [a.vcpus, a.memory_mb, a.disk_gb]), [[2, 4096, 40]])
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('evacuates a server from a host an admin forced down, to the other host', async () => {
      const id = await boot('evac')
      const source = (await api.server(id))!['OS-EXT-SRV-ATTR:host']
      const service = (await api.call('GET', `/os-services?host=${source}`)).body.services[0]
      assert.equal((await api.call('PUT', `/os-services/${service.id}`, { forced_down: true })).status, 200)
      try {
        assert.equal((await api.server(id))!.host_status, 'DOWN')
        const { reply, states, final } = await act(id, 'evacuate', {}, 200)
        const wrong = checkSequence(states, [
          brief('REBUILD', 'active', 'rebuilding'),
          state('REBUILD', 'active', 'rebuild_block_device_mapping', { progress: 0 }),
          state('REBUILD', 'active', 'rebuild_spawning', { progress: 0 }),
          { ...ACTIVE, progress: 0 },
        ])
        assert.equal(wrong, undefined, wrong)
        assert.notEqual(final!['OS-EXT-SRV-ATTR:host'], source)
        assert.equal(final!.host_status, 'UP')
        await finishedAction(id, reply.requestId, 'evacuate', [['compute_rebuild_instance', 'Success']])
        const hostId = (await db().selectFrom('hosts').select('id').where('hostname', '=', final!['OS-EXT-SRV-ATTR:host']).executeTakeFirstOrThrow()).id
        assert.deepEqual((await claims(id)).map((a) => a.host_id), [hostId], 'the claim moved with the server')
      } finally {
        await api.call('PUT', `/os-services/${service.id}`, { forced_down: false })
      }
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('deletes: ACTIVE(deleting) → gone; DELETED with terminated_at for admins; guest, claim and group membership gone', async () => {
      const group = (await api.call('POST', '/os-server-groups', { server_group: { name: 'del', policy: 'anti-affinity' } })).body.server_group.id
      const { id, final: built } = await create('gone', {}, { group })
      assert.equal(built!.status, 'ACTIVE')
      assert.deepEqual(built!.server_groups, [group])
      const del = await api.call('DELETE', `/servers/${id}`)
      assert.equal(del.status, 204)
      const { states } = await traceServerApi(api, id, gone)
      const wrong = checkSequence(states, [state('ACTIVE', 'active', 'deleting')])
      assert.equal(wrong, undefined, wrong)
      const [deleted] = await api.servers(`deleted=true&uuid=${id}`)
      assert.equal(deleted.status, 'DELETED')
      assert.equal(deleted['OS-EXT-STS:vm_state'], 'deleted')
      assert.equal(deleted['OS-EXT-STS:task_state'], null)
      assert.match(deleted['OS-SRV-USG:terminated_at'], TIME_FORMAT)
      assert.ok(deleted['OS-SRV-USG:terminated_at'] >= deleted['OS-SRV-USG:launched_at'])
      await finishedAction(id, del.requestId, 'delete', [['compute_terminate_instance', 'Success']])
      assert.deepEqual((await api.call('GET', `/os-server-groups/${group}`)).body.server_group.members, [])
      for (const driver of drivers()) assert.equal(await driver.info(id), undefined, 'the guest is destroyed')
      assert.equal((await claims(id)).length, 0)
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('a delete that arrives during the build wins: gone for good, no guest, no claim', async () => {
      const created = await api.create({ name: 'racer', imageRef: image, flavorRef: '1', networks: 'none' })
      const building = await traceServerApi(api, created.id, (v) => ['networking', 'block_device_mapping'].includes(v?.['OS-EXT-STS:task_state']))
      assert.equal(building.final!.status, 'BUILD')
      assert.equal((await api.call('DELETE', `/servers/${created.id}`)).status, 204)
      // From the 204 on the server shows deleting until it is gone: the build never moves it back to a build step.
      const { states } = await traceServerApi(api, created.id, gone)
      const wrong = checkSequence(states, [state('BUILD', 'building', 'deleting')])
      assert.equal(wrong, undefined, wrong)
      // Longer than the rest of the build would have taken: the build did not bring it back.
      await new Promise((r) => setTimeout(r, 6 * DELAY_MS))
      assert.equal(await api.server(created.id), undefined)
      const [deleted] = await api.servers(`deleted=true&uuid=${created.id}`)
      assert.equal(deleted.status, 'DELETED')
      for (const driver of drivers()) assert.equal((await driver.listGuests()).some((g) => g.serverId === created.id), false)
      assert.equal((await claims(created.id)).length, 0)
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('a spawn failure: BUILD(spawning) → ERROR with the fault, an Error event, no host and no claim', async () => {
      for (const driver of drivers()) driver.injectFailures(0, { spawn: 'Virtual Interface creation failed' })
      let created: Awaited<ReturnType<typeof create>>
      try {
        created = await create('doomed')
      } finally {
        for (const driver of drivers()) driver.injectFailures(0, {})
      }
      const wrong = checkSequence(created.states, [...BUILD.slice(0, -1), state('ERROR', 'error', null, { power: 0 })])
      assert.equal(wrong, undefined, wrong)
      const view = created.final!
      assert.equal(view.fault.code, 500)
      assert.equal(view.fault.message, 'Virtual Interface creation failed')
      assert.equal(typeof view.fault.details, 'string', 'admins see the details')
      assert.match(view.fault.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      assert.equal(view['OS-EXT-SRV-ATTR:host'], null)
      assert.equal(view['OS-SRV-USG:launched_at'], null)
      await finishedAction(created.id, created.requestId, 'create', [
        ['conductor_schedule_and_build_instances', 'Success'],
        ['compute__do_build_and_run_instance', 'Error'],
      ], 'Error')
      assert.equal((await claims(created.id)).length, 0)
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('no host can take the flavor: BUILD → ERROR with "No valid host was found"', async () => {
      const flavor = await api.createFlavor({ name: 'too-big', vcpus: 1, ram: 4_000_000, disk: 1 })
      const created = await create('nowhere', { flavorRef: flavor })
      const wrong = checkSequence(created.states, [BUILD[0], state('ERROR', 'error', null, { power: 0 })])
      assert.equal(wrong, undefined, wrong)
      assert.equal(created.final!.fault.code, 500)
      assert.match(created.final!.fault.message, /^No valid host was found/)
      await finishedAction(created.id, created.requestId, 'create', [['conductor_schedule_and_build_instances', 'Error']], 'Error')
      assert.equal((await claims(created.id)).length, 0)
    })

    it('an action failure: ERROR with the fault and an Error event; a hard reboot recovers the server and the fault is no longer shown', async () => {
      const id = await boot('flaky')
      for (const driver of drivers()) driver.injectFailures(0, { pause: 'libvirt: operation failed' })
      let failed: Awaited<ReturnType<typeof act>>
      try {
        failed = await act(id, 'pause', null, 202)
      } finally {
        for (const driver of drivers()) driver.injectFailures(0, {})
      }
      let wrong = checkSequence(failed.states, [state('ACTIVE', 'active', 'pausing'), state('ERROR', 'error', null)])
      assert.equal(wrong, undefined, wrong)
      assert.equal(failed.final!.fault.message, 'libvirt: operation failed')
      assert.equal(failed.final!.fault.code, 500)
      await finishedAction(id, failed.reply.requestId, 'pause', [['compute_pause_instance', 'Error']], 'Error')

      // ERROR is the default status of every task state of an errored server but a rebuild's.
      const recovered = await act(id, 'reboot', { type: 'HARD' }, 202)
      wrong = checkSequence(recovered.states, [brief('ERROR', 'error', 'rebooting_hard'), state('ERROR', 'error', 'reboot_pending_hard'), state('ERROR', 'error', 'reboot_started_hard'), ACTIVE])
      assert.equal(wrong, undefined, wrong)
      assert.equal(recovered.final!.fault, undefined)
      await finishedAction(id, recovered.reply.requestId, 'reboot', [['compute_reboot_instance', 'Success']])
    })

    it('a live migration the hypervisor fails rolls back as Nova does: ACTIVE on the source, its claim only, an Error event', async () => {
      const id = await boot('stays')
      const source = (await api.server(id))!['OS-EXT-SRV-ATTR:host']
      for (const driver of drivers()) driver.injectFailures(0, { liveMigrate: 'migration stream broken' })
      let failed: Awaited<ReturnType<typeof act>>
      try {
        failed = await act(id, 'os-migrateLive', { host: null, block_migration: 'auto' }, 202)
      } finally {
        for (const driver of drivers()) driver.injectFailures(0, {})
      }
      const wrong = checkSequence(failed.states, [state('MIGRATING', 'active', 'migrating'), ACTIVE])
      assert.equal(wrong, undefined, wrong)
      assert.equal(failed.final!['OS-EXT-SRV-ATTR:host'], source)
      assert.equal(failed.final!.fault, undefined, 'an ACTIVE server shows no fault')
      await finishedAction(id, failed.reply.requestId, 'live-migration', [['compute_live_migration', 'Error']], 'Error')
      const sourceId = (await db().selectFrom('hosts').select('id').where('hostname', '=', source).executeTakeFirstOrThrow()).id
      assert.deepEqual((await claims(id)).map((a) => a.host_id), [sourceId], 'the destination claim is given back')
      assert.deepEqual(await capacityProblems(db()), [])
      // And it still moves once the hypervisor allows it.
      const moved = await act(id, 'os-migrateLive', { host: null, block_migration: 'auto' }, 202)
      assert.notEqual(moved.final!['OS-EXT-SRV-ATTR:host'], source)
    })

    it('a random failure rate fails some builds: each ends ACTIVE, or ERROR with a fault and no claim', async () => {
      for (const driver of drivers()) {
        driver.injectFailures(0.3)
        driver.setDelay(0)
      }
      let finals: View[]
      try {
        finals = await inParallel(Array.from({ length: 20 }, (_, i) => `r${i}`), 5, async (name) => (await create(name)).final!)
      } finally {
        for (const driver of drivers()) {
          driver.injectFailures(0)
          driver.setDelay(DELAY_MS)
        }
      }
      for (const f of finals) {
        assert.ok(f.status === 'ACTIVE' || f.status === 'ERROR', f.status)
        if (f.status === 'ERROR') {
          assert.match(f.fault?.message ?? '', /^simulated failure of /, `${f.id} shows its fault`)
          assert.equal((await claims(f.id)).length, 0)
        } else assert.equal((await claims(f.id)).length, 1)
      }
      assert.ok(finals.some((f) => f.status === 'ERROR'), 'some failed at a 30% failure rate per operation')
      assert.deepEqual(await capacityProblems(db()), [])
    })

    it('the console log grows with each boot (os-getConsoleOutput)', async () => {
      const id = await boot('console')
      const log = async (length?: number) => {
        const r = await api.action(id, 'os-getConsoleOutput', length === undefined ? {} : { length })
        assert.equal(r.status, 200, JSON.stringify(r.body))
        return r.body.output as string
      }
      const first = await log()
      assert.match(first, /boot 1\)/)
      assert.doesNotMatch(first, /boot 2\)/)
      await act(id, 'reboot', { type: 'SOFT' }, 202)
      const second = await log()
      assert.match(second, /boot 2\)/)
      assert.ok(second.startsWith(first), 'the log of the first boot is kept')
      assert.equal((await log(1)).trim().split('\n').length, 1)
    })
  })
}

/** A second bootable image, uploaded through the image API (rebuilds switch to it). */
async function uploadImage(api: ComputeClient, name: string): Promise<string> {
  const created = await api.other('POST', '/image/v2/images', { name, disk_format: 'raw', container_format: 'bare' })
  if (created.status !== 201) throw new Error(`image create: ${created.status} ${JSON.stringify(created.body)}`)
  const res = await fetch(`${api.baseUrl}/image/v2/images/${created.body.id}/file`, {
    method: 'PUT',
    headers: { 'x-auth-token': api.token, 'content-type': 'application/octet-stream' },
    body: Buffer.alloc(4096, 1),
  })
  if (res.status !== 204) throw new Error(`image upload: ${res.status} ${await res.text()}`)
  return created.body.id as string
}
