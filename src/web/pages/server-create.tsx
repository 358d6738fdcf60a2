/** Create server: flavor, boot source (image, volume, or image copied to a new volume), networks, security groups, key pair, user data. */
import { post } from '../api/http'
import { listFlavors, listImages, listKeypairs, listNetworks, listSecurityGroups, listVolumes, type Flavor } from '../api/resources'
import { session } from '../api/session'
import { ErrorNotice, FormDialog, Loading, Dialog, type Field, type FieldValue } from '../ui/components'
import { useAsync } from '../ui/hooks'

export function flavorLabel(f: Flavor): string {
  return `${f.name} (${f.vcpus} vCPU, ${f.ram >= 1024 ? `${f.ram / 1024} GiB` : `${f.ram} MiB`} RAM, ${f.disk} GiB disk)`
}

/** Base64 of the UTF-8 bytes, as the API wants user data. */
export function base64Utf8(text: string): string {
  let binary = ''
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte)
  return btoa(binary)
}

function createBody(v: Record<string, FieldValue>) {
  const count = Math.max(1, Number(v.count) || 1)
  const networks = (v.networks as string[]).length ? (v.networks as string[]).map((uuid) => ({ uuid })) : 'auto'
  const server: Record<string, unknown> = {
    name: (v.name as string).trim(),
    flavorRef: v.flavor,
    networks,
    min_count: count,
    max_count: count,
  }
  if ((v.securityGroups as string[]).length) server.security_groups = (v.securityGroups as string[]).map((name) => ({ name }))
  if (v.keypair) server.key_name = v.keypair
  if (v.userData) server.user_data = base64Utf8(v.userData as string)
  if (v.source === 'image') server.imageRef = v.image
  else if (v.source === 'volume') server.block_device_mapping_v2 = [{ boot_index: 0, uuid: v.volume, source_type: 'volume', destination_type: 'volume', delete_on_termination: false }]
  else server.block_device_mapping_v2 = [{ boot_index: 0, uuid: v.image, source_type: 'image', destination_type: 'volume', volume_size: Number(v.volumeSize) || 1, delete_on_termination: Boolean(v.deleteVolume) }]
  return { server }
}

export function CreateServerDialog({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }) {
  const choices = useAsync(
    (signal) =>
      Promise.all([listFlavors(signal), listImages(signal), listVolumes(signal), listNetworks(signal), listSecurityGroups(signal), listKeypairs(signal)]).then(([flavors, images, volumes, networks, groups, keypairs]) => ({
        flavors,
        images: images.filter((i) => i.status === 'active'),
        volumes: volumes.filter((v) => v.status === 'available' && String(v.bootable) === 'true'),
        networks: networks.filter((n) => !n['router:external'] || n.project_id === session()?.project.id),
        groups,
        keypairs,
      })),
    [],
  )
  if (!choices.data) {
    return (
      <Dialog title="Create server" onClose={onClose}>
        {choices.error ? <ErrorNotice error={choices.error} title="Could not load the choices" /> : <Loading what="flavors, images and networks" />}
      </Dialog>
    )
  }
  const c = choices.data
  const image = (v: Record<string, FieldValue>) => v.source !== 'volume'
  const fields: Field[] = [
    { name: 'name', label: 'Name', required: true },
    { name: 'count', label: 'Count', type: 'number', min: 1, initial: '1', help: 'Several servers get the name with a number added.' },
    { name: 'flavor', label: 'Flavor', type: 'select', required: true, options: c.flavors.map((f) => ({ value: f.id, label: flavorLabel(f) })), initial: c.flavors.find((f) => f.name === 'm1.tiny')?.id },
    {
      name: 'source',
      label: 'Boot from',
      type: 'radio',
      initial: 'image',
      options: [
        { value: 'image', label: 'Image' },
        { value: 'volume', label: 'Existing volume' },
        { value: 'image-volume', label: 'Image, copied to a new volume' },
      ],
    },
    { name: 'image', label: 'Image', type: 'select', required: true, options: c.images.map((i) => ({ value: i.id, label: i.name || i.id })), when: image },
    { name: 'volumeSize', label: 'Volume size (GiB)', type: 'number', min: 1, initial: '1', when: (v) => v.source === 'image-volume' },
    { name: 'deleteVolume', label: 'Delete the volume with the server', type: 'checkbox', initial: true, when: (v) => v.source === 'image-volume' },
    { name: 'volume', label: 'Volume', type: 'select', required: true, options: c.volumes.map((vol) => ({ value: vol.id, label: `${vol.name || vol.id} (${vol.size} GiB)` })), when: (v) => v.source === 'volume', help: 'Available, bootable volumes.' },
    { name: 'networks', label: 'Networks', type: 'checkboxes', options: c.networks.map((n) => ({ value: n.id, label: `${n.name || n.id}${n.shared ? ' (shared)' : ''}` })), help: 'None chosen: the project network is used (created when there is none).' },
    { name: 'securityGroups', label: 'Security groups', type: 'checkboxes', options: c.groups.map((g) => ({ value: g.name, label: g.name })), initial: c.groups.some((g) => g.name === 'default') ? ['default'] : [] },
    { name: 'keypair', label: 'Key pair', type: 'select', options: c.keypairs.map((k) => ({ value: k.name, label: k.name })), help: 'Its public key is given to the server for SSH logins.' },
    { name: 'userData', label: 'User data', type: 'textarea', placeholder: '#!/bin/sh\necho hello', help: 'Given to the server at boot (cloud-init; a script starting with #! runs).' },
  ]
  return (
    <FormDialog
      title="Create server"
      wide
      fields={fields}
      submitLabel="Create"
      onClose={onClose}
      submit={async (values) => {
        await post('compute', '/servers', createBody(values))
        onCreated()
      }}
    />
  )
}
