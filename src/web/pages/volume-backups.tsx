/**
 * Volume backups (Cinder's /backups): the list on the Volumes page, a backup made from a volume's row or from the
 * list (full or incremental, `force` for an attached volume), restore to a new volume or onto an available one,
 * delete. docs/block-storage.md, "Backups", says what each does to the bytes.
 */
import { del, get, post } from '../api/http'
import { listVolumes, type Volume } from '../api/resources'
import { ActionButton, Status, formatTime, type Field, type FieldValue } from '../ui/components'
import { FormAction, ResourceList } from '../ui/resource-list'

interface Backup {
  id: string
  name: string | null
  status: string
  size: number
  volume_id: string
  is_incremental: boolean
  fail_reason: string | null
  created_at: string
}

/** Cinder backs up available volumes, and attached ones only when told to (`force`). */
export const canBackUp = (v: Volume) => v.status === 'available' || v.status === 'in-use'
const BUSY = /ing$/
const INCREMENTAL_HELP = 'Store only what changed since the volume’s latest backup (it needs one).'
const FORCE_HELP = 'The volume is attached: its data is read while the server may be writing to it.'

/** The fields of a backup; `volumes` adds the volume choice (the list's button), otherwise it is the row's volume. */
function backupFields(defaultName: string, volumes?: Volume[], inUse = false): Field[] {
  const attached = new Set(volumes?.filter((v) => v.status === 'in-use').map((v) => v.id))
  const volumeField: Field[] = volumes ? [{ name: 'volume', label: 'Volume', type: 'select', required: true, options: volumes.map((v) => ({ value: v.id, label: `${v.name || v.id} (${v.size} GiB, ${v.status})` })) }] : []
  return [
    ...volumeField,
    { name: 'name', label: 'Backup name', initial: defaultName },
    { name: 'incremental', label: 'Incremental', type: 'checkbox', help: INCREMENTAL_HELP },
    { name: 'force', label: 'Back up while attached', type: 'checkbox', help: FORCE_HELP, when: (f) => (volumes ? attached.has(f.volume as string) : inUse) },
  ]
}

const createBackup = (volumeId: string, f: Record<string, FieldValue>) =>
  post('volume', '/backups', { backup: { volume_id: volumeId, name: (f.name as string) || undefined, incremental: Boolean(f.incremental), force: Boolean(f.force) } })

/** The "Back up…" button of a volume's row. */
export function BackUpAction({ volume, onDone }: { volume: Volume; onDone: () => void }) {
  return <FormAction label="Back up" onDone={onDone} fields={() => backupFields(`${volume.name || 'volume'}-backup`, undefined, volume.status === 'in-use')} submit={(f) => createBackup(volume.id, f)} />
}

function restoreFields(b: Backup, volumes: Volume[]): Field[] {
  const targets = volumes.filter((v) => v.status === 'available' && v.size >= b.size)
  return [
    {
      name: 'target',
      label: 'Restore to',
      type: 'radio',
      initial: 'new',
      options: [
        { value: 'new', label: 'A new volume' },
        { value: 'existing', label: 'An existing volume' },
      ],
    },
    { name: 'name', label: 'New volume name', placeholder: `restore_backup_${b.id}`, when: (f) => f.target === 'new' },
    {
      name: 'volume',
      label: 'Volume',
      type: 'select',
      required: true,
      when: (f) => f.target === 'existing',
      help: `An available volume of at least ${b.size} GiB. Its data is replaced by the backup’s.`,
      options: targets.map((v) => ({ value: v.id, label: `${v.name || v.id} (${v.size} GiB)` })),
    },
  ]
}

const restore = (b: Backup, f: Record<string, FieldValue>) =>
  post('volume', `/backups/${b.id}/restore`, { restore: f.target === 'existing' ? { volume_id: f.volume } : { name: (f.name as string) || undefined } })

type Row = Backup & { volumeNames: Map<string, string> }

function backupActions(b: Row, changed: () => void) {
  return (
    <>
      {b.status === 'available' && <FormAction label="Restore" onDone={changed} fields={async () => restoreFields(b, await listVolumes())} submit={(f) => restore(b, f)} />}
      {(b.status === 'available' || b.status === 'error') && <ActionButton label="Delete" danger confirm={`Delete backup ${b.name || b.id}?`} run={() => del('volume', `/backups/${b.id}`)} onDone={changed} />}
    </>
  )
}

/**
 * The backups of the project. `changed` tells the page that volumes changed too (a restore makes or overwrites
 * one); `reloadWith` reloads this list after a change elsewhere (a backup made from a volume's row).
 */
export function BackupsList({ changed, reloadWith }: { changed: () => void; reloadWith: unknown }) {
  return (
    <ResourceList<Row>
      title="Volume backups"
      heading="h2"
      reloadWith={reloadWith}
      load={async (signal) => {
        const [backups, volumes] = await Promise.all([get<{ backups: Backup[] }>('volume', '/backups/detail?limit=1000', signal), get<{ volumes: { id: string; name: string }[] }>('volume', '/volumes?limit=1000', signal)])
        const volumeNames = new Map(volumes.volumes.map((v) => [v.id, v.name || v.id]))
        return backups.backups.map((b) => ({ ...b, volumeNames }))
      }}
      rowKey={(b) => b.id}
      empty="No backups. Make one with “Create backup” or a volume’s “Back up” button."
      busy={(b) => BUSY.test(b.status)}
      create={{
        label: 'Create backup',
        fields: async () => backupFields('', (await listVolumes()).filter(canBackUp)),
        submit: async (f) => {
          await createBackup(f.volume as string, f)
          changed()
        },
      }}
      columns={[
        { label: 'Name', value: (b) => b.name || b.id },
        { label: 'Status', value: (b) => (b.fail_reason && b.status === 'error' ? <span title={b.fail_reason}><Status value={b.status} /> {b.fail_reason}</span> : <Status value={b.status} />) },
        { label: 'Size', value: (b) => `${b.size} GiB` },
        { label: 'Volume', value: (b) => b.volumeNames.get(b.volume_id) ?? `${b.volume_id} (deleted)` },
        { label: 'Incremental', value: (b) => (b.is_incremental ? 'yes' : 'no') },
        { label: 'Created', value: (b) => formatTime(b.created_at) },
      ]}
      actions={(b) => backupActions(b, changed)}
    />
  )
}
