/**
 * Admin → Hypervisors: compute's view of each hypervisor host, its availability zone and how much of it servers
 * use; then the zones and the host aggregates (aggregates.tsx).
 */
import { call, get } from '../../api/http'
import { Donut, ErrorNotice, Loading, Status } from '../../ui/components'
import { href } from '../../router'
import { useAsync, usePoll } from '../../ui/hooks'
import type { HostView } from './hosts'
import { AggregatesList, ZonesTable, listZones, zoneOfHost } from './aggregates'

export interface Hypervisor {
  id: string
  hypervisor_hostname: string
  state: string
  status: string
  vcpus: number
  vcpus_used: number
  memory_mb: number
  memory_mb_used: number
  local_gb: number
  local_gb_used: number
  running_vms: number
  host_ip: string
  service?: { host: string }
  cpu_info?: { accelerator?: string; accelerator_reason?: string }
}

// 2.88 removed the usage fields from hypervisors (placement has them in Nova); 2.87 is the last that shows them.
export const USAGE_VERSION = { 'OpenStack-API-Version': 'compute 2.87' }

export type Ratios = NonNullable<HostView['hypervisor_info']>

/** The three allocation rings of a hypervisor: vCPUs, RAM and disk against what may be placed on it. */
export function AllocationRings({ h, ratios }: { h: Hypervisor; ratios: Partial<Ratios> }) {
  return (
    <div class="donuts">
      <Usage label="vCPUs" used={h.vcpus_used} capacity={h.vcpus} ratio={ratios.cpu_allocation_ratio} />
      <Usage label="RAM" used={Math.round(h.memory_mb_used / 1024)} capacity={Math.round(h.memory_mb / 1024)} ratio={ratios.ram_allocation_ratio} unit=" GiB" />
      <Usage label="Disk" used={h.local_gb_used} capacity={h.local_gb} ratio={ratios.disk_allocation_ratio} unit=" GiB" />
    </div>
  )
}

/**
 * One resource's ring: used against what the scheduler may place (capacity × allocation ratio), so 3 vCPUs of 2
 * physical with a ratio of 4 is 3 of 8, not a red 150 %. The note says how the limit is made when it is not 1:1.
 */
function Usage({ label, used, capacity, ratio, unit }: { label: string; used: number; capacity: number; ratio: number | undefined; unit?: string }) {
  const r = ratio ?? 1
  const note = r === 1 ? undefined : `${capacity.toLocaleString('en')}${unit ?? ''} × ${r} allocation ratio`
  return <Donut label={label} used={used} limit={Math.floor(capacity * r)} unit={unit} note={note} />
}

/** Guests under TCG are emulated instruction by instruction: the operator should know why boots are slow. */
export function TcgNotice({ h }: { h: Hypervisor }) {
  if (h.cpu_info?.accelerator !== 'tcg') return null
  const reason = h.cpu_info.accelerator_reason
  return (
    <p class="notice warn" role="note">
      Guests on this host run under <strong>TCG</strong> (QEMU's software emulation, no KVM): they boot and run many times slower.
      {reason ? ` Why: ${reason}.` : ''}
    </p>
  )
}

export function HypervisorsPage() {
  const list = useAsync(async (signal) => (await call<{ hypervisors: Hypervisor[] }>('compute', '/os-hypervisors/detail', { signal, headers: USAGE_VERSION })).body.hypervisors, [])
  // The allocation ratios are the resource manager's (Nova's os-hypervisors has none); without them 1:1.
  const hosts = useAsync(async (signal) => new Map((await get<HostView[]>('resmgr', '/hosts', signal)).map((h) => [h.id, h.hypervisor_info])), [])
  const zones = useAsync((signal) => listZones(signal), [])
  usePoll(() => {
    list.reload()
    zones.reload()
  }, 10000)
  const zoneOf = zoneOfHost(zones.data ?? [])
  const hostOf = (h: Hypervisor) => h.service?.host ?? h.hypervisor_hostname
  return (
    <section>
      <h1>Hypervisors</h1>
      <ErrorNotice error={list.error} title="Could not load the hypervisors" />
      {!list.data && !list.error && <Loading />}
      {list.data?.length === 0 && <p>No hypervisors. Onboard a host and give it the hypervisor role.</p>}
      {list.data?.map((h) => {
        const ratios: Partial<Ratios> = hosts.data?.get(h.id) ?? {}
        return (
          <section class="usage">
            <h2>
              <a href={href(`/admin/hosts/${h.id}`)}>{h.hypervisor_hostname}</a> <Status value={h.state?.toUpperCase()} /> <Status value={h.status} />
            </h2>
            <p class="muted">
              {h.host_ip} · zone {zones.data ? (zoneOf.get(hostOf(h)) ?? 'unknown') : '…'} · {h.running_vms} servers
              {h.cpu_info?.accelerator && ` · ${h.cpu_info.accelerator.toUpperCase()}`}
            </p>
            <TcgNotice h={h} />
            <AllocationRings h={h} ratios={ratios} />
          </section>
        )
      })}
      <h2>Availability zones</h2>
      <ErrorNotice error={zones.error} title="Could not load the availability zones" />
      {zones.data && <ZonesTable zones={zones.data} />}
      <AggregatesList hosts={(list.data ?? []).map(hostOf)} onChanged={zones.reload} />
    </section>
  )
}
