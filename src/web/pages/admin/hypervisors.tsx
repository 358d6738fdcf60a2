/** Admin → Hypervisors: compute's view of each hypervisor host and how much of it servers use. */
import { call } from '../../api/http'
import { Donut, ErrorNotice, Loading, Status } from '../../ui/components'
import { useAsync, usePoll } from '../../ui/hooks'

interface Hypervisor {
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
}

// 2.88 removed the usage fields from hypervisors (placement has them in Nova); 2.87 is the last that shows them.
const USAGE_VERSION = { 'OpenStack-API-Version': 'compute 2.87' }

export function HypervisorsPage() {
  const list = useAsync(async (signal) => (await call<{ hypervisors: Hypervisor[] }>('compute', '/os-hypervisors/detail', { signal, headers: USAGE_VERSION })).body.hypervisors, [])
  usePoll(async () => list.reload(), 10000)
  return (
    <section>
      <h1>Hypervisors</h1>
      <ErrorNotice error={list.error} title="Could not load the hypervisors" />
      {!list.data && !list.error && <Loading />}
      {list.data?.length === 0 && <p>No hypervisors. Onboard a host and give it the hypervisor role.</p>}
      {list.data?.map((h) => (
        <section class="usage">
          <h2>
            {h.hypervisor_hostname} <Status value={h.state?.toUpperCase()} /> <Status value={h.status} />
          </h2>
          <p class="muted">
            {h.host_ip} · {h.running_vms} servers
          </p>
          <div class="donuts">
            <Donut label="vCPUs" used={h.vcpus_used} limit={h.vcpus} />
            <Donut label="RAM" used={Math.round(h.memory_mb_used / 1024)} limit={Math.round(h.memory_mb / 1024)} unit=" GiB" />
            <Donut label="Disk" used={h.local_gb_used} limit={h.local_gb} unit=" GiB" />
          </div>
        </section>
      ))}
    </section>
  )
}
