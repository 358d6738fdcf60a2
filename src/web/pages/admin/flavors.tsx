/** Admin → Flavors: every flavor (public and private), create and delete. */
import { del, get, post } from '../../api/http'
import type { Flavor } from '../../api/resources'
import { ActionButton } from '../../ui/components'
import { ResourceList } from '../../ui/resource-list'

export function FlavorsPage() {
  return (
    <ResourceList<Flavor>
      title="Flavors"
      load={async (signal) => (await get<{ flavors: Flavor[] }>('compute', '/flavors/detail?is_public=None', signal)).flavors}
      rowKey={(f) => f.id}
      empty="No flavors."
      create={{
        label: 'Create flavor',
        fields: () => [
          { name: 'name', label: 'Name', required: true },
          { name: 'vcpus', label: 'vCPUs', type: 'number', min: 1, required: true, initial: '1' },
          { name: 'ram', label: 'RAM (MiB)', type: 'number', min: 1, required: true, initial: '1024' },
          { name: 'disk', label: 'Root disk (GiB)', type: 'number', min: 0, required: true, initial: '10' },
          { name: 'id', label: 'ID', help: 'Empty: a generated UUID.' },
          { name: 'public', label: 'Public (every project may use it)', type: 'checkbox', initial: true },
        ],
        submit: (v) => post('compute', '/flavors', { flavor: { name: v.name, vcpus: Number(v.vcpus), ram: Number(v.ram), disk: Number(v.disk), ...(v.id ? { id: v.id } : {}), 'os-flavor-access:is_public': Boolean(v.public) } }),
      }}
      columns={[
        { label: 'Name', value: (f) => f.name },
        { label: 'ID', value: (f) => f.id },
        { label: 'vCPUs', value: (f) => f.vcpus },
        { label: 'RAM', value: (f) => `${f.ram} MiB` },
        { label: 'Disk', value: (f) => `${f.disk} GiB` },
        { label: 'Public', value: (f) => (f['os-flavor-access:is_public'] ? 'yes' : 'no') },
      ]}
      actions={(f, reload) => <ActionButton label="Delete" danger confirm={`Delete flavor ${f.name}? Servers keep theirs.`} run={() => del('compute', `/flavors/${encodeURIComponent(f.id)}`)} onDone={reload} />}
    />
  )
}
