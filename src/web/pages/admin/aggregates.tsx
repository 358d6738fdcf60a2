/**
 * Admin → Hypervisors, second half: availability zones and host aggregates (Nova's os-availability-zone and
 * os-aggregates), with the calls `openstack aggregate create/set/add host/remove host/delete` make.
 */
import { del, get, post, put } from '../../api/http'
import { ActionButton, Status, Table } from '../../ui/components'
import { FormAction, ResourceList } from '../../ui/resource-list'

export interface Aggregate {
  id: number
  name: string
  availability_zone: string | null
  hosts: string[]
  metadata: Record<string, string>
}

export interface Zone {
  zoneName: string
  zoneState: { available: boolean }
  /** Host name → service name → its state (null when the zone has no available host). */
  hosts: Record<string, Record<string, { available: boolean; active: boolean }>> | null
}

// The metadata key Nova keeps an aggregate's zone in; the page shows it in its own column.
const ZONE_KEY = 'availability_zone'

export async function listZones(signal?: AbortSignal): Promise<Zone[]> {
  return (await get<{ availabilityZoneInfo: Zone[] }>('compute', '/os-availability-zone/detail', signal)).availabilityZoneInfo
}

/** Each host's zone by host name, as the zones' detail lists them. */
export function zoneOfHost(zones: Zone[]): Map<string, string> {
  return new Map(zones.flatMap((z) => Object.keys(z.hosts ?? {}).map((host) => [host, z.zoneName] as [string, string])))
}

export function ZonesTable({ zones }: { zones: Zone[] }) {
  return (
    <Table
      rows={zones}
      rowKey={(z) => z.zoneName}
      empty="No availability zones."
      columns={[
        { label: 'Zone', value: (z) => z.zoneName },
        { label: 'State', value: (z) => <Status value={z.zoneState.available ? 'available' : 'not available'} /> },
        { label: 'Hosts', value: (z) => Object.keys(z.hosts ?? {}).join(', ') || 'none' },
      ]}
    />
  )
}

const action = (a: Aggregate, body: unknown) => post('compute', `/os-aggregates/${a.id}/action`, body)

function metadataText(a: Aggregate): string {
  return (
    Object.entries(a.metadata)
      .filter(([key]) => key !== ZONE_KEY)
      .map(([key, value]) => `${key}=${value}`)
      .join(', ') || 'none'
  )
}

/**
 * The aggregates with their zone, hosts and metadata. `hosts` are the hypervisors' host names (what add_host
 * takes); `onChanged` tells the page that zones may have moved (the hypervisors show theirs).
 */
export function AggregatesList({ hosts, onChanged }: { hosts: string[]; onChanged: () => void }) {
  const then = async (p: Promise<unknown>) => {
    await p
    onChanged()
  }
  return (
    <ResourceList<Aggregate>
      title="Host aggregates"
      heading="h2"
      load={async (signal) => (await get<{ aggregates: Aggregate[] }>('compute', '/os-aggregates', signal)).aggregates}
      rowKey={(a) => String(a.id)}
      empty="No host aggregates. Create one to group hosts, or to make an availability zone of them."
      create={{
        label: 'Create aggregate',
        fields: () => [
          { name: 'name', label: 'Name', required: true },
          { name: 'zone', label: 'Availability zone', help: 'Empty: the aggregate is no zone; its hosts keep theirs.' },
        ],
        submit: (v) => then(post('compute', '/os-aggregates', { aggregate: { name: v.name, ...(v.zone ? { availability_zone: v.zone } : {}) } })),
      }}
      columns={[
        { label: 'Name', value: (a) => a.name },
        { label: 'Availability zone', value: (a) => a.availability_zone ?? 'none' },
        { label: 'Hosts', value: (a) => a.hosts.join(', ') || 'none' },
        { label: 'Metadata', value: metadataText },
      ]}
      actions={(a, reload) => (
        <>
          <FormAction
            label="Set zone"
            onDone={reload}
            fields={() => [{ name: 'zone', label: 'Availability zone', initial: a.availability_zone ?? '', help: 'Empty: the aggregate is no zone any more.' }]}
            submit={(v) => then(put('compute', `/os-aggregates/${a.id}`, { aggregate: { availability_zone: v.zone || null } }))}
          />
          <FormAction
            label="Add host"
            onDone={reload}
            fields={() => [{ name: 'host', label: 'Host', type: 'select', required: true, options: hosts.filter((h) => !a.hosts.includes(h)).map((h) => ({ value: h, label: h })) }]}
            submit={(v) => then(action(a, { add_host: { host: v.host } }))}
          />
          {a.hosts.length > 0 && (
            <FormAction
              label="Remove host"
              onDone={reload}
              fields={() => [{ name: 'host', label: 'Host', type: 'select', required: true, options: a.hosts.map((h) => ({ value: h, label: h })) }]}
              submit={(v) => then(action(a, { remove_host: { host: v.host } }))}
            />
          )}
          <FormAction
            label="Set metadata"
            onDone={reload}
            fields={() => [
              { name: 'key', label: 'Key', required: true },
              { name: 'value', label: 'Value', help: 'Empty: the key is removed.' },
            ]}
            submit={(v) => then(action(a, { set_metadata: { metadata: { [v.key as string]: v.value || null } } }))}
          />
          <ActionButton label="Delete" danger confirm={`Delete aggregate ${a.name}? Only an aggregate without hosts can be deleted.`} run={() => then(del('compute', `/os-aggregates/${a.id}`))} onDone={reload} />
        </>
      )}
    />
  )
}
