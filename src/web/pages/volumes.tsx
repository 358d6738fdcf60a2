/** Volumes: create (blank, from an image or a snapshot), attach to and detach from servers, snapshot, back up, extend, delete; the snapshots and the backups. */
import { useState } from 'preact/hooks'
import { call, del, get, post } from '../api/http'
import { listImages, type Volume } from '../api/resources'
import { ActionButton, Status, formatTime } from '../ui/components'
import { href } from '../router'
import { FormAction, ResourceList } from '../ui/resource-list'
import { BackUpAction, BackupsList, canBackUp } from './volume-backups'

interface Snapshot {
  id: string
  name: string
  status: string
  size: number
  volume_id: string
  created_at: string
}

/** Transient states: creating, attaching…, and a backup's on its volume (backing-up, restoring-backup). */
const BUSY = /ing$|^backing-up$|^restoring-backup$/
const serverNames = async (signal?: AbortSignal) => new Map((await get<{ servers: { id: string; name: string }[] }>('compute', '/servers?limit=1000', signal)).servers.map((s) => [s.id, s.name]))
const volumeAction = (id: string, body: unknown) => call('volume', `/volumes/${id}/action`, { method: 'POST', body })

type Row = Volume & { serverNames: Map<string, string> }


function volumeActions(v: Row, reload: () => void) {
  const attached = v.attachments?.[0]
  return (
    <>
      {v.status === 'available' && (
        <FormAction
          label="Attach"
          onDone={reload}
          fields={async () => {
            const servers = (await get<{ servers: { id: string; name: string; status: string }[] }>('compute', '/servers/detail?limit=1000')).servers.filter((s) => ['ACTIVE', 'SHUTOFF', 'PAUSED'].includes(s.status))
            return [{ name: 'server', label: 'Server', type: 'select', required: true, options: servers.map((s) => ({ value: s.id, label: s.name })) }]
          }}
          submit={(f) => post('compute', `/servers/${f.server}/os-volume_attachments`, { volumeAttachment: { volumeId: v.id } })}
        />
      )}
      {v.status === 'in-use' && attached && <ActionButton label="Detach" confirm={`Detach ${v.name || v.id} from its server?`} run={() => del('compute', `/servers/${attached.server_id}/os-volume_attachments/${v.id}`)} onDone={reload} />}
      {(v.status === 'available' || v.status === 'in-use') && (
        <FormAction
          label="Snapshot"
          onDone={reload}
          fields={() => [{ name: 'name', label: 'Snapshot name', required: true, initial: `${v.name || 'volume'}-snapshot` }]}
          submit={(f) => post('volume', '/snapshots', { snapshot: { volume_id: v.id, name: f.name, force: v.status === 'in-use' } })}
        />
      )}
      {canBackUp(v) && <BackUpAction volume={v} onDone={reload} />}
      {v.status === 'available' && (
        <FormAction label="Extend" onDone={reload} fields={() => [{ name: 'size', label: 'New size (GiB)', type: 'number', required: true, min: v.size + 1, initial: String(v.size + 1) }]} submit={(f) => volumeAction(v.id, { 'os-extend': { new_size: Number(f.size) } })} />
      )}
      {(v.status === 'available' || v.status === 'error') && <ActionButton label="Delete" danger confirm={`Delete volume ${v.name || v.id}? Its data is lost.`} run={() => del('volume', `/volumes/${v.id}`)} onDone={reload} />}
    </>
  )
}

export function VolumesPage() {
  // A change in one list can show in the others (a snapshot or backup of a volume, a restore into one): they all reload.
  const [generation, setGeneration] = useState(0)
  const changed = () => setGeneration((g) => g + 1)
  return (
    <>
      <ResourceList<Row>
        title="Volumes"
        reloadWith={generation}
        load={async (signal) => {
          const [volumes, names] = await Promise.all([get<{ volumes: Volume[] }>('volume', '/volumes/detail?limit=1000', signal), serverNames(signal)])
          return volumes.volumes.map((v) => ({ ...v, serverNames: names }))
        }}
        rowKey={(v) => v.id}
        empty="No volumes. Create one with “Create volume”."
        busy={(v) => BUSY.test(v.status)}
        create={{
          label: 'Create volume',
          fields: async () => {
            const [images, snapshots] = await Promise.all([listImages(), get<{ snapshots: Snapshot[] }>('volume', '/snapshots')])
            return [
              { name: 'name', label: 'Name', required: true },
              { name: 'size', label: 'Size (GiB)', type: 'number', required: true, min: 1, initial: '1' },
              {
                name: 'source',
                label: 'Source',
                type: 'radio',
                initial: 'blank',
                options: [
                  { value: 'blank', label: 'Empty' },
                  { value: 'image', label: 'Image' },
                  { value: 'snapshot', label: 'Snapshot' },
                ],
              },
              { name: 'image', label: 'Image', type: 'select', required: true, when: (v) => v.source === 'image', options: images.filter((i) => i.status === 'active').map((i) => ({ value: i.id, label: i.name })) },
              { name: 'snapshot', label: 'Snapshot', type: 'select', required: true, when: (v) => v.source === 'snapshot', options: snapshots.snapshots.filter((s) => s.status === 'available').map((s) => ({ value: s.id, label: `${s.name || s.id} (${s.size} GiB)` })) },
              { name: 'description', label: 'Description' },
            ]
          },
          submit: (v) =>
            post('volume', '/volumes', {
              volume: {
                name: v.name,
                size: Number(v.size),
                description: v.description || undefined,
                ...(v.source === 'image' ? { imageRef: v.image } : {}),
                ...(v.source === 'snapshot' ? { snapshot_id: v.snapshot } : {}),
              },
            }),
        }}
        columns={[
          { label: 'Name', value: (v) => v.name || v.id },
          { label: 'Status', value: (v) => <Status value={v.status} /> },
          { label: 'Size', value: (v) => `${v.size} GiB` },
          { label: 'Type', value: (v) => v.volume_type },
          { label: 'Bootable', value: (v) => (String(v.bootable) === 'true' ? 'yes' : 'no') },
          { label: 'Attached to', value: (v) => v.attachments?.map((a) => <a href={href(`/servers/${a.server_id}`)}>{`${v.serverNames.get(a.server_id) ?? a.server_id} on ${a.device}`}</a>) },
          { label: 'Created', value: (v) => formatTime(v.created_at) },
        ]}
        actions={(v) => volumeActions(v, changed)}
      />
      <ResourceList<Snapshot>
        title="Volume snapshots"
        heading="h2"
        reloadWith={generation}
        load={async (signal) => (await get<{ snapshots: Snapshot[] }>('volume', '/snapshots/detail', signal)).snapshots}
        rowKey={(s) => s.id}
        empty="No snapshots. Take one from a volume’s “Snapshot” button."
        busy={(s) => BUSY.test(s.status)}
        columns={[
          { label: 'Name', value: (s) => s.name || s.id },
          { label: 'Status', value: (s) => <Status value={s.status} /> },
          { label: 'Size', value: (s) => `${s.size} GiB` },
          { label: 'Volume', value: (s) => s.volume_id },
          { label: 'Created', value: (s) => formatTime(s.created_at) },
        ]}
        actions={(s, reload) => <ActionButton label="Delete" danger confirm={`Delete snapshot ${s.name || s.id}?`} run={() => del('volume', `/snapshots/${s.id}`)} onDone={reload} />}
      />
      <BackupsList changed={changed} reloadWith={generation} />
    </>
  )
}
