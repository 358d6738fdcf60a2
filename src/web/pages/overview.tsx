/** Overview: the project's quota usage as rings, from the compute, block storage and network quota APIs. */
import { get } from '../api/http'
import { session } from '../api/session'
import { Donut, ErrorNotice, Loading } from '../ui/components'
import { useAsync } from '../ui/hooks'

interface Usage {
  label: string
  used: number
  limit: number
  unit?: string
}

type ComputeLimits = { limits: { absolute: Record<string, number> } }
type VolumeQuota = { quota_set: Record<string, { in_use: number; limit: number } | string> }
type NetworkQuota = { quota: Record<string, { used: number; limit: number; reserved: number }> }

async function computeUsage(signal: AbortSignal): Promise<Usage[]> {
  const a = (await get<ComputeLimits>('compute', '/limits', signal)).limits.absolute
  return [
    { label: 'Servers', used: a.totalInstancesUsed, limit: a.maxTotalInstances },
    { label: 'vCPUs', used: a.totalCoresUsed, limit: a.maxTotalCores },
    { label: 'RAM', used: Math.round(a.totalRAMUsed / 1024), limit: a.maxTotalRAMSize < 0 ? -1 : Math.round(a.maxTotalRAMSize / 1024), unit: ' GiB' },
    { label: 'Key pairs', used: a.totalKeyPairsUsed ?? 0, limit: a.maxTotalKeypairs },
  ]
}

async function volumeUsage(signal: AbortSignal): Promise<Usage[]> {
  const q = (await get<VolumeQuota>('volume', `/os-quota-sets/${session()!.project.id}?usage=True`, signal)).quota_set
  const row = (key: string) => q[key] as { in_use: number; limit: number }
  return [
    { label: 'Volumes', used: row('volumes').in_use, limit: row('volumes').limit },
    { label: 'Volume storage', used: row('gigabytes').in_use, limit: row('gigabytes').limit, unit: ' GiB' },
    { label: 'Volume snapshots', used: row('snapshots').in_use, limit: row('snapshots').limit },
  ]
}

async function networkUsage(signal: AbortSignal): Promise<Usage[]> {
  const q = (await get<NetworkQuota>('network', `/quotas/${session()!.project.id}/details`, signal)).quota
  const labels: [string, string][] = [
    ['network', 'Networks'],
    ['port', 'Ports'],
    ['router', 'Routers'],
    ['floatingip', 'Floating IPs'],
    ['security_group', 'Security groups'],
  ]
  return labels.filter(([key]) => q[key]).map(([key, label]) => ({ label, used: q[key].used, limit: q[key].limit }))
}

function UsageGroup({ title, load }: { title: string; load: (signal: AbortSignal) => Promise<Usage[]> }) {
  const usage = useAsync(load, [])
  return (
    <section class="usage">
      <h2>{title}</h2>
      <ErrorNotice error={usage.error} title={`Could not load ${title.toLowerCase()} usage`} />
      {!usage.data && !usage.error && <Loading />}
      <div class="donuts">
        {usage.data?.map((u) => (
          <Donut {...u} />
        ))}
      </div>
    </section>
  )
}

export function OverviewPage() {
  const s = session()!
  return (
    <section>
      <h1>Overview</h1>
      <p class="muted">
        Quota usage of project <strong>{s.project.name}</strong>.
      </p>
      <UsageGroup title="Compute" load={computeUsage} />
      <UsageGroup title="Block storage" load={volumeUsage} />
      <UsageGroup title="Network" load={networkUsage} />
    </section>
  )
}
