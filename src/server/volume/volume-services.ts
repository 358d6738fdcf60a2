/**
 * Block storage services as Cinder's os-services and os-hosts show them: the scheduler (`pcc`) and one volume
 * service per backend of each storage place (`<place>@<backend>`, placement.ts), with what admins set on them.
 * A disabled or frozen volume service's backend gets no new volumes (choosePlace asks `closedBackends`); a
 * frozen one's volumes are not deleted, extended or retyped either (Cinder's freeze: management stops, I/O goes on).
 */
import { badRequest, notFound } from '../../contracts/errors.js'
import { cinderTime } from './model.js'
import { isUp } from '../hosts/host-status.js'
import { CONTROLLER } from '../../contracts/host/storage-place.js'
import type { Db } from '../storage/store.js'

export const SCHEDULER = { binary: 'cinder-scheduler', host: 'pcc' } as const
export const VOLUME_BINARY = 'cinder-volume'

/** What a list of services is derived from: which backends the control plane has, when a storage host is down. */
export interface ServiceScope {
  downAfterMs: number
  controllerBackends: string[]
}

export interface VolumeServiceRecord {
  binary: string
  host: string
  zone: string
  up: boolean
  updatedAt: number
  disabled: boolean
  disabledReason: string | null
  frozen: boolean
}

/** A volume service as `openstack volume service list` shows it: one per backend of each storage place. */
export interface BackendService {
  host: string
  up: boolean
  updatedAt: number
}

/** The control plane's backends (up while this process serves), and each storage host's backends. */
export async function backendServices(db: Db, downAfterMs: number, controllerBackends: string[], now = Date.now()): Promise<BackendService[]> {
  const rows = await db
    .selectFrom('storage_hosts')
    .innerJoin('hosts', 'hosts.id', 'storage_hosts.host_id')
    .select(['hosts.hostname', 'storage_hosts.backends', 'storage_hosts.reported_at', 'hosts.last_heartbeat_at', 'hosts.forced_down', 'hosts.service_status'])
    .orderBy('hosts.hostname')
    .execute()
  const services: BackendService[] = controllerBackends.map((backend) => ({ host: `${CONTROLLER}@${backend}`, up: true, updatedAt: now }))
  for (const row of rows) {
    for (const backend of Object.keys(JSON.parse(row.backends) as Record<string, unknown>)) {
      services.push({ host: `${row.hostname}@${backend}`, up: isUp(row, now, downAfterMs), updatedAt: Number(row.reported_at) })
    }
  }
  return services
}

/** Every service with its state: the scheduler first, then the backends by place. */
export async function listServices(db: Db, scope: ServiceScope, now = Date.now()): Promise<VolumeServiceRecord[]> {
  const [backends, states] = await Promise.all([backendServices(db, scope.downAfterMs, scope.controllerBackends, now), db.selectFrom('volume_service_states').selectAll().execute()])
  const stateOf = (binary: string, host: string) => states.find((s) => s.binary === binary && s.host === host)
  const record = (binary: string, host: string, up: boolean, updatedAt: number): VolumeServiceRecord => {
    const state = stateOf(binary, host)
    return { binary, host, zone: 'nova', up, updatedAt, disabled: state?.disabled === 1, disabledReason: state?.disabled_reason ?? null, frozen: state?.frozen === 1 }
  }
  return [record(SCHEDULER.binary, SCHEDULER.host, true, now), ...backends.map((b) => record(VOLUME_BINARY, b.host, b.up, b.updatedAt))]
}

/** Cinder's os-services entry. */
export function serviceView(s: VolumeServiceRecord): Record<string, unknown> {
  return {
    binary: s.binary,
    host: s.host,
    zone: s.zone,
    status: s.disabled ? 'disabled' : 'enabled',
    state: s.up ? 'up' : 'down',
    updated_at: cinderTime(s.updatedAt),
    disabled_reason: s.disabledReason,
    ...(s.binary === VOLUME_BINARY ? { frozen: s.frozen } : {}),
  }
}

async function saveState(db: Db, s: VolumeServiceRecord): Promise<void> {
  const values = { disabled: s.disabled ? 1 : 0, disabled_reason: s.disabledReason, frozen: s.frozen ? 1 : 0, updated_at: Date.now() }
  await db
    .insertInto('volume_service_states')
    .values({ host: s.host, binary: s.binary, ...values })
    .onConflict((oc) => oc.columns(['host', 'binary']).doUpdateSet(values))
    .execute()
}

/** os-services enable/disable: one service by host and binary; 404 for one that does not exist. */
export async function setEnabled(db: Db, scope: ServiceScope, target: { host: string; binary: string }, enabled: boolean, reason: string | null = null): Promise<VolumeServiceRecord> {
  const service = (await listServices(db, scope)).find((s) => s.host === target.host && s.binary === target.binary)
  if (!service) throw notFound(`Service ${target.binary} on host ${target.host} could not be found.`)
  const changed = { ...service, disabled: !enabled, disabledReason: enabled ? null : reason }
  await saveState(db, changed)
  return changed
}

/**
 * os-services freeze/thaw: the volume services of a host (`<place>@<backend>`, or a place for all its backends).
 * Cinder answers 400 for a host without volume services.
 */
export async function setFrozen(db: Db, scope: ServiceScope, host: string, frozen: boolean): Promise<void> {
  const services = (await listServices(db, scope)).filter((s) => s.binary === VOLUME_BINARY && (s.host === host || s.host.split('@')[0] === host))
  if (services.length === 0) throw badRequest(`Invalid input received: no volume service runs on host ${host}.`)
  for (const service of services) await saveState(db, { ...service, frozen })
}

/** The backends (`<place>@<backend>`) new volumes must not go to: disabled or frozen. */
export async function closedBackends(db: Db): Promise<Set<string>> {
  const rows = await db.selectFrom('volume_service_states').select('host').where('binary', '=', VOLUME_BINARY).where((eb) => eb.or([eb('disabled', '=', 1), eb('frozen', '=', 1)])).execute()
  return new Set(rows.map((r) => r.host))
}

/** Whether the backend a volume lives on is frozen (no deletes, extends or retypes until thawed). */
export async function isFrozen(db: Db, backendHost: string): Promise<boolean> {
  const row = await db.selectFrom('volume_service_states').select('frozen').where('binary', '=', VOLUME_BINARY).where('host', '=', backendHost).executeTakeFirst()
  return row?.frozen === 1
}

export interface HostUsage {
  volumes: number
  volumeGb: number
  snapshots: number
  snapshotGb: number
}

/** What one volume service's backend (`<place>@<backend>`) holds: in total and per project, by project id. */
export async function hostUsage(db: Db, backendHost: string): Promise<{ total: HostUsage; projects: (HostUsage & { projectId: string })[] }> {
  const [place, backend] = backendHost.split('@')
  const volumes = await db
    .selectFrom('volumes')
    .leftJoin('hosts', 'hosts.id', 'volumes.location')
    .select(['volumes.id', 'volumes.project_id', 'volumes.size', 'volumes.location', 'hosts.hostname'])
    .where('volumes.backend', '=', backend ?? '')
    .where('volumes.location', 'is not', null)
    .execute()
  // A volume's place is named as volume services name it: `controller`, or the storage host's hostname.
  const here = volumes.filter((v) => (v.location === CONTROLLER ? CONTROLLER : (v.hostname ?? v.location)) === place)
  const snapshots = here.length === 0 ? [] : await db.selectFrom('volume_snapshots').select(['project_id', 'size']).where('volume_id', 'in', here.map((v) => v.id)).execute()
  const empty = (): HostUsage => ({ volumes: 0, volumeGb: 0, snapshots: 0, snapshotGb: 0 })
  const total = empty()
  const byProject = new Map<string, HostUsage>()
  const of = (projectId: string) => byProject.get(projectId) ?? byProject.set(projectId, empty()).get(projectId)!
  for (const v of here) {
    for (const u of [total, of(v.project_id)]) {
      u.volumes += 1
      u.volumeGb += v.size
    }
  }
  for (const s of snapshots) {
    for (const u of [total, of(s.project_id)]) {
      u.snapshots += 1
      u.snapshotGb += s.size
    }
  }
  return { total, projects: [...byProject.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([projectId, u]) => ({ projectId, ...u })) }
}
