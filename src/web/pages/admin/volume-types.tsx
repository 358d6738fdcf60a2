/**
 * Admin → Volume types: every volume type with its QoS specs (Cinder's qos-specs: the consumer and the limits,
 * which pcc applies to attached disks) and, where the block storage API offers it, its encryption; create types
 * and QoS specs, associate and disassociate them (what `openstack volume qos create/associate/disassociate` calls).
 */
import { useState } from 'preact/hooks'
import { ApiError, del, get, post } from '../../api/http'
import { ActionButton } from '../../ui/components'
import { FormAction, ResourceList } from '../../ui/resource-list'

interface VolumeType {
  id: string
  name: string
  description: string | null
  is_public: boolean
  qos_specs_id?: string | null
}

interface QosSpecs {
  id: string
  name: string
  consumer: string
  specs: Record<string, string>
}

/** A type's encryption as `GET /types/{id}/encryption` answers it; `{}` when the type is not encrypted. */
interface Encryption {
  provider?: string
  cipher?: string | null
  key_size?: number | null
  control_location?: string
}

type TypeRow = VolumeType & { qos?: QosSpecs; encryption?: Encryption }

const CONSUMERS = ['back-end', 'front-end', 'both']

const listQos = async (signal?: AbortSignal) => (await get<{ qos_specs: QosSpecs[] }>('volume', '/qos-specs', signal)).qos_specs

const specsText = (specs: Record<string, string>) =>
  Object.entries(specs)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ') || 'none'

/** `key=value` lines (blank lines skipped) as a specs object; a line without `=` is refused with its number. */
export function parseSpecs(text: string): Record<string, string> {
  const specs: Record<string, string> = {}
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (!line) continue
    const eq = line.indexOf('=')
    if (eq < 1) throw new Error(`Line ${i + 1} ("${line}") is not key=value, as in total_iops_sec=500.`)
    specs[line.slice(0, eq).trim()] = line.slice(eq + 1).trim()
  }
  return specs
}

/**
 * Each type's encryption, or undefined for every type when the API does not answer (a cloud without volume
 * encryption): the page then leaves the column out rather than claim types are unencrypted.
 */
async function loadEncryption(types: VolumeType[], signal: AbortSignal): Promise<Map<string, Encryption> | undefined> {
  const answers = await Promise.all(types.map((t) => get<Encryption>('volume', `/types/${t.id}/encryption`, signal).then((e) => [t.id, e] as const, (err: unknown) => (err instanceof ApiError ? undefined : Promise.reject(err)))))
  const known = answers.filter((a) => a !== undefined)
  return known.length > 0 ? new Map(known) : undefined
}

function encryptionText(e: Encryption | undefined): string {
  if (!e?.provider) return 'none'
  return [e.provider, e.cipher, e.key_size ? `${e.key_size} bits` : undefined, e.control_location].filter(Boolean).join(', ')
}

function qosText(q: QosSpecs | undefined) {
  if (!q) return 'none'
  return (
    <>
      <strong>{q.name}</strong> ({q.consumer})<br />
      <small>{specsText(q.specs)}</small>
    </>
  )
}

function TypesList({ onChanged, showEncryption, encrypted }: { onChanged: () => void; showEncryption: boolean; encrypted: (has: boolean) => void }) {
  return (
    <ResourceList<TypeRow>
      title="Volume types"
      load={async (signal) => {
        const [types, qos] = await Promise.all([get<{ volume_types: VolumeType[] }>('volume', '/types', signal), listQos(signal)])
        const encryption = await loadEncryption(types.volume_types, signal)
        encrypted(encryption !== undefined)
        const byId = new Map(qos.map((q) => [q.id, q]))
        return types.volume_types.map((t) => ({ ...t, qos: t.qos_specs_id ? byId.get(t.qos_specs_id) : undefined, encryption: encryption?.get(t.id) }))
      }}
      rowKey={(t) => t.id}
      empty="No volume types."
      create={{
        label: 'Create volume type',
        fields: () => [
          { name: 'name', label: 'Name', required: true },
          { name: 'description', label: 'Description' },
          { name: 'public', label: 'Public (every project may use it)', type: 'checkbox', initial: true },
        ],
        submit: (v) => post('volume', '/types', { volume_type: { name: v.name, ...(v.description ? { description: v.description } : {}), 'os-volume-type-access:is_public': Boolean(v.public) } }),
      }}
      columns={[
        { label: 'Name', value: (t) => t.name },
        { label: 'Description', value: (t) => t.description ?? '' },
        { label: 'Public', value: (t) => (t.is_public ? 'yes' : 'no') },
        { label: 'QoS specs', value: (t) => qosText(t.qos) },
        ...(showEncryption ? [{ label: 'Encryption', value: (t: TypeRow) => encryptionText(t.encryption) }] : []),
      ]}
      actions={(t, reload) => {
        const done = () => {
          reload()
          onChanged()
        }
        return t.qos ? (
          <ActionButton label="Disassociate QoS" confirm={`Disassociate QoS specs ${t.qos.name} from ${t.name}?`} run={() => get('volume', `/qos-specs/${t.qos!.id}/disassociate?vol_type_id=${t.id}`)} onDone={done} />
        ) : (
          <FormAction
            label="Associate QoS"
            onDone={done}
            fields={async () => [{ name: 'qos', label: 'QoS specs', type: 'select', required: true, options: (await listQos()).map((q) => ({ value: q.id, label: `${q.name} (${q.consumer})` })) }]}
            submit={(v) => get('volume', `/qos-specs/${v.qos as string}/associate?vol_type_id=${t.id}`)}
          />
        )
      }}
    />
  )
}

function QosList({ onChanged }: { onChanged: () => void }) {
  return (
    <ResourceList<QosSpecs & { types: string[] }>
      title="QoS specs"
      heading="h2"
      load={async (signal) => {
        const all = await listQos(signal)
        const used = await Promise.all(all.map(async (q) => (await get<{ qos_associations: { name: string }[] }>('volume', `/qos-specs/${q.id}/associations`, signal)).qos_associations.map((a) => a.name)))
        return all.map((q, i) => ({ ...q, types: used[i] }))
      }}
      rowKey={(q) => q.id}
      empty="No QoS specs. Create one, then associate it with a volume type."
      create={{
        label: 'Create QoS specs',
        fields: () => [
          { name: 'name', label: 'Name', required: true },
          { name: 'consumer', label: 'Consumer', type: 'select', required: true, options: CONSUMERS.map((c) => ({ value: c, label: c })), help: 'front-end: QEMU throttles the attached disk; back-end: the storage back end; both.' },
          { name: 'specs', label: 'Specs', type: 'textarea', placeholder: 'total_iops_sec=500\ntotal_bytes_sec=104857600', help: 'One key=value a line.' },
        ],
        submit: (v) => post('volume', '/qos-specs', { qos_specs: { ...parseSpecs((v.specs as string) ?? ''), name: v.name, consumer: v.consumer } }),
      }}
      columns={[
        { label: 'Name', value: (q) => q.name },
        { label: 'Consumer', value: (q) => q.consumer },
        { label: 'Specs', value: (q) => specsText(q.specs) },
        { label: 'Volume types', value: (q) => q.types.join(', ') || 'none' },
      ]}
      actions={(q, reload) => (
        <ActionButton
          label="Delete"
          danger
          confirm={`Delete QoS specs ${q.name}?`}
          run={() => del('volume', `/qos-specs/${q.id}`)}
          onDone={() => {
            reload()
            onChanged()
          }}
        />
      )}
    />
  )
}

export function VolumeTypesPage() {
  // Each list remounts (and so reloads) when the other changes what it shows.
  const [typesVersion, setTypesVersion] = useState(0)
  const [qosVersion, setQosVersion] = useState(0)
  const [showEncryption, setShowEncryption] = useState(false)
  return (
    <>
      <TypesList key={`types-${qosVersion}`} showEncryption={showEncryption} encrypted={setShowEncryption} onChanged={() => setTypesVersion((n) => n + 1)} />
      <QosList key={`qos-${typesVersion}`} onChanged={() => setQosVersion((n) => n + 1)} />
    </>
  )
}
