/** Admin → Quotas: a project's compute, block storage and network limits, edited in one form. */
import { useState } from 'preact/hooks'
import { get, put } from '../../api/http'
import { ErrorNotice, Form, Loading, type Field } from '../../ui/components'
import { useAsync } from '../../ui/hooks'
import { listAllProjects } from './identity'

/** The quotas shown: service, key in its quota set, label. */
const QUOTAS: { service: 'compute' | 'volume' | 'network'; key: string; label: string }[] = [
  { service: 'compute', key: 'instances', label: 'Servers' },
  { service: 'compute', key: 'cores', label: 'vCPUs' },
  { service: 'compute', key: 'ram', label: 'RAM (MiB)' },
  { service: 'compute', key: 'key_pairs', label: 'Key pairs' },
  { service: 'compute', key: 'server_groups', label: 'Server groups' },
  { service: 'volume', key: 'volumes', label: 'Volumes' },
  { service: 'volume', key: 'gigabytes', label: 'Volume storage (GiB)' },
  { service: 'volume', key: 'snapshots', label: 'Volume snapshots' },
  { service: 'network', key: 'network', label: 'Networks' },
  { service: 'network', key: 'subnet', label: 'Subnets' },
  { service: 'network', key: 'port', label: 'Ports' },
  { service: 'network', key: 'router', label: 'Routers' },
  { service: 'network', key: 'floatingip', label: 'Floating IPs' },
  { service: 'network', key: 'security_group', label: 'Security groups' },
  { service: 'network', key: 'security_group_rule', label: 'Security group rules' },
]

async function loadQuotas(projectId: string, signal?: AbortSignal): Promise<Record<string, number>> {
  const [compute, volume, network] = await Promise.all([
    get<{ quota_set: Record<string, number> }>('compute', `/os-quota-sets/${projectId}`, signal),
    get<{ quota_set: Record<string, number> }>('volume', `/os-quota-sets/${projectId}`, signal),
    get<{ quota: Record<string, number> }>('network', `/quotas/${projectId}`, signal),
  ])
  const sets = { compute: compute.quota_set, volume: volume.quota_set, network: network.quota }
  return Object.fromEntries(QUOTAS.map((q) => [`${q.service}.${q.key}`, sets[q.service][q.key]]))
}

function QuotaForm({ projectId }: { projectId: string }) {
  const quotas = useAsync((signal) => loadQuotas(projectId, signal), [projectId])
  const [saved, setSaved] = useState(false)
  if (!quotas.data) return quotas.error ? <ErrorNotice error={quotas.error} /> : <Loading what="quotas" />
  const fields: Field[] = QUOTAS.map((q) => ({ name: `${q.service}.${q.key}`, label: `${q.label} (${q.service})`, type: 'number', min: -1, initial: String(quotas.data![`${q.service}.${q.key}`]), help: q.key === 'instances' ? '-1 means no limit.' : undefined }))
  return (
    <>
      <Form
        key={projectId}
        fields={fields}
        submitLabel="Save quotas"
        submit={async (v) => {
          setSaved(false)
          const part = (service: string) => Object.fromEntries(QUOTAS.filter((q) => q.service === service).map((q) => [q.key, Number(v[`${q.service}.${q.key}`])]))
          await put('compute', `/os-quota-sets/${projectId}`, { quota_set: part('compute') })
          await put('volume', `/os-quota-sets/${projectId}`, { quota_set: part('volume') })
          await put('network', `/quotas/${projectId}`, { quota: part('network') })
          setSaved(true)
        }}
      />
      {saved && (
        <p role="status" class="notice">
          Saved.
        </p>
      )}
    </>
  )
}

export function QuotasPage() {
  const projects = useAsync((signal) => listAllProjects(signal), [])
  const [project, setProject] = useState<string>()
  const chosen = project ?? projects.data?.[0]?.id
  return (
    <section>
      <h1>Quotas</h1>
      <ErrorNotice error={projects.error} />
      {projects.data && (
        <label class="filters">
          Project{' '}
          <select value={chosen} onChange={(e) => setProject(e.currentTarget.value)}>
            {projects.data.map((p) => (
              <option value={p.id}>{p.name}</option>
            ))}
          </select>
        </label>
      )}
      {chosen && <QuotaForm key={chosen} projectId={chosen} />}
    </section>
  )
}
