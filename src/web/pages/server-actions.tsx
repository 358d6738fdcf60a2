/**
 * Every action of the compute API on one server, as a table: when it is offered (by status, lock, role), the
 * form it needs, and the request it sends. The API still decides (a 409 says why); the table only keeps the
 * toolbar to what can work now.
 */
import { useEffect, useState } from 'preact/hooks'
import { call, del, get, post, put } from '../api/http'
import { listFlavors, listFloatingIps, listImages, listNetworks, listPorts, listSecurityGroups, listVolumes, type Server } from '../api/resources'
import { isAdmin } from '../api/session'
import { ActionButton, Dialog, FormDialog, type Field, type FieldValue } from '../ui/components'
import { flavorLabel } from './server-create'

type Values = Record<string, FieldValue>
interface ServerAction {
  id: string
  label: string
  when: (s: Server) => boolean
  admin?: boolean
  danger?: boolean
  /** Shown under "More actions" (the toolbar keeps the everyday ones). */
  more?: boolean
  confirm?: (s: Server) => string
  /** The form to fill first (loaded when the action is chosen). */
  form?: (s: Server) => Promise<Field[]>
  /** Sends the request; a returned text is shown to the user (a generated password). */
  run: (s: Server, values: Values) => Promise<string | void>
}

const is =
  (...statuses: string[]) =>
  (s: Server) =>
    statuses.includes(s.status)

const action = (body: unknown) => (s: Server) => call('compute', `/servers/${s.id}/action`, { method: 'POST', body }).then(() => undefined)

async function externalNetworks() {
  return (await listNetworks()).filter((n) => n['router:external'])
}

export const SERVER_ACTIONS: ServerAction[] = [
  { id: 'start', label: 'Start', when: is('SHUTOFF'), run: action({ 'os-start': null }) },
  { id: 'stop', label: 'Stop', when: is('ACTIVE', 'ERROR', 'RESCUE'), run: action({ 'os-stop': null }) },
  { id: 'reboot', label: 'Reboot', when: is('ACTIVE'), run: action({ reboot: { type: 'SOFT' } }) },
  { id: 'hard-reboot', label: 'Hard reboot', when: is('ACTIVE', 'SHUTOFF', 'PAUSED', 'SUSPENDED', 'ERROR'), confirm: (s) => `Hard reboot ${s.name}? Unsaved data in the guest is lost.`, run: action({ reboot: { type: 'HARD' } }) },
  { id: 'pause', label: 'Pause', when: is('ACTIVE'), run: action({ pause: null }) },
  { id: 'unpause', label: 'Unpause', when: is('PAUSED'), run: action({ unpause: null }) },
  { id: 'suspend', label: 'Suspend', when: is('ACTIVE'), run: action({ suspend: null }) },
  { id: 'resume', label: 'Resume', when: is('SUSPENDED'), run: action({ resume: null }) },
  { id: 'lock', more: true, label: 'Lock', when: (s) => !s.locked, form: async () => [{ name: 'reason', label: 'Reason (optional)' }], run: (s, v) => action({ lock: v.reason ? { locked_reason: v.reason } : null })(s) },
  { id: 'unlock', more: true, label: 'Unlock', when: (s) => s.locked, run: action({ unlock: null }) },
  { id: 'shelve', more: true, label: 'Shelve', when: is('ACTIVE', 'SHUTOFF', 'PAUSED', 'SUSPENDED'), run: action({ shelve: null }) },
  { id: 'unshelve', label: 'Unshelve', when: is('SHELVED', 'SHELVED_OFFLOADED'), run: action({ unshelve: null }) },
  { id: 'shelve-offload', more: true, label: 'Offload shelved', admin: true, when: is('SHELVED'), run: action({ shelveOffload: null }) },
  {
    id: 'rescue',
    more: true,
    label: 'Rescue',
    when: is('ACTIVE', 'SHUTOFF', 'ERROR'),
    form: async () => [{ name: 'image', label: 'Rescue image', type: 'select', options: (await listImages()).filter((i) => i.status === 'active').map((i) => ({ value: i.id, label: i.name })), help: 'Empty: the server’s own image.' }],
    run: async (s, v) => {
      const body = await post<{ adminPass?: string }>('compute', `/servers/${s.id}/action`, { rescue: v.image ? { rescue_image_ref: v.image } : null })
      return body?.adminPass ? `The rescue system's password: ${body.adminPass}` : undefined
    },
  },
  { id: 'unrescue', label: 'Unrescue', when: is('RESCUE'), run: action({ unrescue: null }) },
  {
    id: 'resize',
    more: true,
    label: 'Resize',
    when: is('ACTIVE', 'SHUTOFF'),
    form: async (s) => [{ name: 'flavor', label: 'New flavor', type: 'select', required: true, options: (await listFlavors()).filter((f) => f.name !== s.flavor.original_name).map((f) => ({ value: f.id, label: flavorLabel(f) })) }],
    run: (s, v) => action({ resize: { flavorRef: v.flavor } })(s),
  },
  { id: 'confirm-resize', label: 'Confirm resize', when: is('VERIFY_RESIZE'), run: action({ confirmResize: null }) },
  { id: 'revert-resize', label: 'Revert resize', when: is('VERIFY_RESIZE'), run: action({ revertResize: null }) },
  {
    id: 'rebuild',
    more: true,
    label: 'Rebuild',
    when: is('ACTIVE', 'SHUTOFF', 'ERROR'),
    danger: true,
    form: async () => [{ name: 'image', label: 'Image', type: 'select', required: true, options: (await listImages()).filter((i) => i.status === 'active').map((i) => ({ value: i.id, label: i.name })), help: 'The root disk is replaced by this image.' }],
    run: (s, v) => action({ rebuild: { imageRef: v.image } })(s),
  },
  {
    id: 'snapshot',
    label: 'Create snapshot',
    when: is('ACTIVE', 'SHUTOFF', 'PAUSED', 'SUSPENDED'),
    form: async (s) => [{ name: 'name', label: 'Snapshot name', required: true, initial: `${s.name}-snapshot` }],
    run: async (s, v) => {
      const body = await post<{ image_id?: string }>('compute', `/servers/${s.id}/action`, { createImage: { name: v.name } })
      return `Snapshot image ${v.name} is being created (${body?.image_id ?? ''}); it appears under Images.`
    },
  },
  {
    id: 'password',
    more: true,
    label: 'Change password',
    when: is('ACTIVE'),
    form: async () => [{ name: 'password', label: 'New administrator password', type: 'password', required: true, autocomplete: 'new-password' }],
    run: (s, v) => action({ changePassword: { adminPass: v.password } })(s),
  },
  {
    id: 'edit',
    more: true,
    label: 'Edit',
    when: () => true,
    form: async (s) => [
      { name: 'name', label: 'Name', required: true, initial: s.name },
      { name: 'description', label: 'Description', initial: s.description ?? '' },
    ],
    run: async (s, v) => void (await put('compute', `/servers/${s.id}`, { server: { name: v.name, description: v.description || null } })),
  },
  {
    id: 'attach-volume',
    more: true,
    label: 'Attach volume',
    when: is('ACTIVE', 'SHUTOFF', 'PAUSED', 'SHELVED', 'SHELVED_OFFLOADED'),
    form: async () => [{ name: 'volume', label: 'Volume', type: 'select', required: true, options: (await listVolumes()).filter((v) => v.status === 'available').map((v) => ({ value: v.id, label: `${v.name || v.id} (${v.size} GiB)` })), help: 'Available volumes of this project.' }],
    run: async (s, v) => void (await post('compute', `/servers/${s.id}/os-volume_attachments`, { volumeAttachment: { volumeId: v.volume } })),
  },
  {
    id: 'attach-interface',
    more: true,
    label: 'Attach interface',
    when: is('ACTIVE', 'SHUTOFF', 'PAUSED'),
    form: async () => [{ name: 'network', label: 'Network', type: 'select', required: true, options: (await listNetworks()).filter((n) => !n['router:external']).map((n) => ({ value: n.id, label: n.name || n.id })) }],
    run: async (s, v) => void (await post('compute', `/servers/${s.id}/os-interface`, { interfaceAttachment: { net_id: v.network } })),
  },
  {
    id: 'floating-ip',
    more: true,
    label: 'Associate floating IP',
    when: (s) => Object.keys(s.addresses ?? {}).length > 0,
    form: async (s) => {
      const [ips, ports, externals] = await Promise.all([listFloatingIps(), listPorts(), externalNetworks()])
      const mine = ports.filter((p) => p.device_id === s.id)
      return [
        { name: 'ip', label: 'Floating IP', type: 'select', required: true, options: [...ips.filter((ip) => !ip.port_id).map((ip) => ({ value: ip.id, label: ip.floating_ip_address })), ...externals.map((n) => ({ value: `new:${n.id}`, label: `Allocate a new one from ${n.name}` }))] },
        { name: 'port', label: 'Interface', type: 'select', required: true, options: mine.map((p) => ({ value: p.id, label: p.fixed_ips.map((f) => f.ip_address).join(', ') || p.id })) },
      ]
    },
    run: async (_s, v) => {
      const choice = v.ip as string
      if (choice.startsWith('new:')) await post('network', '/floatingips', { floatingip: { floating_network_id: choice.slice(4), port_id: v.port } })
      else await put('network', `/floatingips/${choice}`, { floatingip: { port_id: v.port } })
    },
  },
  {
    id: 'add-group',
    more: true,
    label: 'Add security group',
    when: (s) => Object.keys(s.addresses ?? {}).length > 0,
    form: async (s) => {
      const on = new Set((s.security_groups ?? []).map((g) => g.name))
      return [{ name: 'group', label: 'Security group', type: 'select', required: true, options: (await listSecurityGroups()).filter((g) => !on.has(g.name)).map((g) => ({ value: g.id, label: g.name })) }]
    },
    run: (s, v) => action({ addSecurityGroup: { name: v.group } })(s),
  },
  {
    id: 'remove-group',
    more: true,
    label: 'Remove security group',
    when: (s) => (s.security_groups ?? []).length > 0,
    form: async (s) => [{ name: 'group', label: 'Security group', type: 'select', required: true, options: [...new Set((s.security_groups ?? []).map((g) => g.name))].map((name) => ({ value: name, label: name })) }],
    run: (s, v) => action({ removeSecurityGroup: { name: v.group } })(s),
  },
  {
    id: 'migrate',
    more: true,
    label: 'Migrate',
    admin: true,
    when: is('ACTIVE', 'SHUTOFF'),
    form: async () => [{ name: 'host', label: 'Target host (optional)', help: 'Empty: the scheduler picks one.' }],
    run: (s, v) => action({ migrate: v.host ? { host: v.host } : null })(s),
  },
  {
    id: 'live-migrate',
    more: true,
    label: 'Live migrate',
    admin: true,
    when: is('ACTIVE', 'PAUSED'),
    form: async () => [{ name: 'host', label: 'Target host (optional)', help: 'Empty: the scheduler picks one.' }],
    run: (s, v) => action({ 'os-migrateLive': { host: v.host || null, block_migration: 'auto' } })(s),
  },
  {
    id: 'evacuate',
    more: true,
    label: 'Evacuate',
    admin: true,
    when: () => true,
    form: async () => [{ name: 'host', label: 'Target host (optional)', help: 'Only for a server whose host is down.' }],
    run: (s, v) => action({ evacuate: v.host ? { host: v.host } : {} })(s),
  },
  { id: 'crash-dump', more: true, label: 'Trigger crash dump', when: is('ACTIVE'), confirm: (s) => `Send a crash-dump interrupt (NMI) to ${s.name}?`, run: action({ trigger_crash_dump: null }) },
  {
    id: 'delete',
    label: 'Delete',
    danger: true,
    when: () => true,
    confirm: (s) => `Delete server ${s.name}? This cannot be undone.`,
    run: async (s) => {
      await del('compute', `/servers/${s.id}`)
      location.hash = '#/servers'
    },
  },
]

/** Loads the fields of a form action, then shows its dialog. */
function ActionForm({ server, spec, onClose, onDone }: { server: Server; spec: ServerAction; onClose: () => void; onDone: (message?: string) => void }) {
  const [fields, setFields] = useState<Field[]>()
  const [error, setError] = useState<unknown>()
  useEffect(() => void spec.form!(server).then(setFields, setError), [])
  if (!fields) return <Dialog title={spec.label} onClose={onClose}>{error ? <p role="alert">{String((error as Error).message)}</p> : <p>Loading…</p>}</Dialog>
  return <FormDialog title={`${spec.label}: ${server.name}`} fields={fields} submitLabel={spec.label} onClose={onClose} submit={async (values) => onDone((await spec.run(server, values)) ?? undefined)} />
}

export function ServerActions({ server, onChanged }: { server: Server; onChanged: () => void }) {
  const [open, setOpen] = useState<ServerAction>()
  const [message, setMessage] = useState<string>()
  const admin = isAdmin()
  const offered = SERVER_ACTIONS.filter((a) => a.when(server) && (!a.admin || admin))
  const done = (text?: string) => {
    if (text) setMessage(text)
    onChanged()
  }
  const button = (a: ServerAction) =>
    a.form ? (
      <button type="button" class={a.danger ? 'danger' : ''} onClick={() => setOpen(a)}>
        {a.label}…
      </button>
    ) : (
      <ActionButton label={a.label} danger={a.danger} confirm={a.confirm?.(server)} run={() => a.run(server, {}).then((text) => done(text ?? undefined))} />
    )
  const more = offered.filter((a) => a.more)
  return (
    <div class="toolbar" role="toolbar" aria-label="Server actions">
      {offered.filter((a) => !a.more).map(button)}
      {more.length > 0 && (
        <details class="more">
          <summary>More actions</summary>
          <div class="menu">{more.map(button)}</div>
        </details>
      )}
      {open && <ActionForm server={server} spec={open} onClose={() => setOpen(undefined)} onDone={done} />}
      {message && (
        <Dialog title="Done" onClose={() => setMessage(undefined)}>
          <p role="status">{message}</p>
        </Dialog>
      )}
    </div>
  )
}

/** Detach buttons for one attached volume, interface and floating IP. */
export const detachVolume = (server: Server, volumeId: string) => del('compute', `/servers/${server.id}/os-volume_attachments/${volumeId}`)
export const detachInterface = (server: Server, portId: string) => del('compute', `/servers/${server.id}/os-interface/${portId}`)
export const disassociateFloatingIp = async (address: string) => {
  const ip = (await get<{ floatingips: { id: string }[] }>('network', `/floatingips?floating_ip_address=${encodeURIComponent(address)}`)).floatingips[0]
  if (ip) await put('network', `/floatingips/${ip.id}`, { floatingip: { port_id: null } })
}
