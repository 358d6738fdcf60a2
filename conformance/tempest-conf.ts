/**
 * The tempest.conf for a pcc cloud: identity v3 only; compute, network, image and volume enabled; every feature
 * flag set to what pcc has. A flag that turns a feature off carries the reason (the capability pcc lacks): the
 * run prints those and docs/conformance.md lists them, since they are the only skips allowed. The remote consoles
 * are on where the cloud runs real guests (the all-in-one QEMU cloud of the real-guests selection), off on
 * simulated hosts.
 */
import type { CloudResources, GuestKind, Hypervisor } from './pcc.js'
import { ADMIN, SETTINGS } from './pcc.js'
import { FILTERS } from '../src/server/scheduler/filters.js'

export interface Option {
  section: string
  name: string
  value: string | number | boolean | string[]
  /** For a feature pcc does not have: why the flag is off. */
  missing?: string
  /** A feature of real guests only: on (true) when the cloud runs them (QEMU), off with `missing` on simulated hosts. */
  realGuests?: true
}

type Flags = Record<string, boolean | string | number>

/**
 * Flags pcc lacks, with the capability missing. Everything not listed here is on (or Tempest's default). Those
 * marked `realGuests` are off only on simulated hosts: the real-guests selection's cloud (all-in-one, QEMU) turns
 * them on, and Tempest's console tests pass against its guests (docs/conformance.md).
 */
export const FEATURES_OFF: Option[] = [
  { section: 'compute-feature-enabled', name: 'vnc_console', value: false, missing: 'VNC is not available on simulated hosts (only the QEMU driver has a display)', realGuests: true },
  { section: 'compute-feature-enabled', name: 'spice_console', value: false, missing: 'no SPICE consoles' },
  { section: 'compute-feature-enabled', name: 'serial_console', value: false, missing: 'Tempest\'s serial console test needs a guest answering on its serial port, which simulated hosts do not run', realGuests: true },
  { section: 'compute-feature-enabled', name: 'rdp_console', value: false, missing: 'no RDP consoles' },
  { section: 'compute-feature-enabled', name: 'metadata_service', value: false, missing: 'the CI cloud\'s hosts are simulated: their guests reach no metadata service (QEMU hosts serve one at 169.254.169.254); the tests it gates need SSH validation too', realGuests: true },
  { section: 'validation', name: 'run_validation', value: false, missing: 'simulated hosts have no guests to log into over SSH (on in the real-guest selections, which log into QEMU guests through floating IPs)', realGuests: true },
  { section: 'compute-feature-enabled', name: 'personality', value: false, missing: 'file injection (personality, removed from Nova at 2.57) is not implemented' },
  { section: 'compute-feature-enabled', name: 'attach_encrypted_volume', value: false, missing: 'pcc encrypts volumes with LUKS only and writes no image into an encrypted volume; the scenarios this gates use the plain provider and boot from encrypted volumes made from images (docs/block-storage.md, "Encrypted volumes")' },
  { section: 'compute-feature-enabled', name: 'xenapi_apis', value: false, missing: 'no XenAPI' },
  { section: 'compute-feature-enabled', name: 'nova_cert', value: false, missing: 'os-certificates was removed from Nova' },
  { section: 'volume-feature-enabled', name: 'multi_backend', value: false, missing: 'the CI cloud has one volume backend (file, on the control plane): lvm needs a storage host, which simulated hosts are not' },
  { section: 'volume-feature-enabled', name: 'manage_volume', value: false, missing: 'no manage/unmanage of existing backend volumes' },
  { section: 'volume-feature-enabled', name: 'manage_snapshot', value: false, missing: 'no manage/unmanage of existing backend snapshots' },
  { section: 'identity-feature-enabled', name: 'api_v2', value: false, missing: 'identity v2 (removed from Keystone in Queens): pcc serves v3 only' },
  { section: 'identity-feature-enabled', name: 'api_v2_admin', value: false, missing: 'identity v2 admin (removed from Keystone in Queens)' },
  { section: 'identity-feature-enabled', name: 'trust', value: false, missing: 'no OS-TRUST trusts' },
  { section: 'identity-feature-enabled', name: 'api_extensions', value: [], missing: 'none of the OS-INHERIT (inherited grants) and OS-EC2 (EC2 credentials) extensions' },
  { section: 'image-feature-enabled', name: 'import_image', value: false, missing: 'no interoperable image import (only direct upload)' },
  { section: 'image-feature-enabled', name: 'manage_locations', value: false, missing: 'no image locations' },
  { section: 'image-feature-enabled', name: 'api_v1', value: false, missing: 'Glance v1 was removed from OpenStack' },
  { section: 'service_available', name: 'swift', value: false, missing: 'no object storage service' },
  { section: 'service_available', name: 'horizon', value: false, missing: 'no dashboard' },
]

/** The flags that are off for a cloud of these hosts: on real guests, the consoles are on. */
export function featuresOff(hypervisor: Hypervisor): Option[] {
  return FEATURES_OFF.filter((f) => !(f.realGuests && hypervisor === 'qemu'))
}

/** The real guests' features, on: the flags FEATURES_OFF turns off on simulated hosts. */
const realGuestFeatures = (): Option[] => FEATURES_OFF.filter((f) => f.realGuests).map((f) => ({ section: f.section, name: f.name, value: true }))

const flags = (section: string, values: Flags): Option[] => Object.entries(values).map(([name, value]) => ({ section, name, value }))

export function tempestOptions(url: string, cloud: CloudResources, workspace: string, hypervisor: Hypervisor = 'simulated'): Option[] {
  const realGuests = hypervisor === 'qemu'
  return [
    ...flags('DEFAULT', { log_dir: `${workspace}/logs`, log_file: 'tempest.log', use_stderr: false }),
    ...flags('oslo_concurrency', { lock_path: `${workspace}/tempest_lock` }),
    ...flags('auth', {
      admin_username: ADMIN.username,
      admin_password: ADMIN.password,
      admin_project_name: ADMIN.project,
      admin_domain_name: ADMIN.domain,
      use_dynamic_credentials: true,
      create_isolated_networks: true,
    }),
    ...flags('identity', {
      uri_v3: `${url}/identity/v3`,
      auth_version: 'v3',
      region: 'RegionOne',
      v3_endpoint_type: 'public',
      user_lockout_failure_attempts: Number(SETTINGS.PCC_LOCKOUT_FAILURE_ATTEMPTS),
      user_lockout_duration: Number(SETTINGS.PCC_LOCKOUT_DURATION_SECONDS),
      // pcc keeps no password history: only the new password counts (Keystone's unique_last_password_count = 1).
      user_unique_last_password_count: 1,
    }),
    ...flags('identity-feature-enabled', { api_v3: true, application_credentials: true, access_rules: true, project_tags: true, security_compliance: true }),
    ...flags('compute', {
      image_ref: cloud.imageRef,
      image_ref_alt: cloud.imageRefAlt,
      flavor_ref: cloud.flavorRef,
      flavor_ref_alt: cloud.flavorRefAlt,
      min_microversion: '2.1',
      max_microversion: '2.96',
      // The simulated cloud has three hosts; the all-in-one QEMU cloud is one machine.
      min_compute_nodes: realGuests ? 1 : 2,
      // Real guests boot under TCG on a CI machine shared with other suites: generous (GUEST_WAITS).
      build_timeout: realGuests ? GUEST_WAITS[cloud.guest].build_timeout : 120,
      // pcc offloads at shelve, as Nova does with shelved_offload_time = 0.
      shelved_offload_time: 0,
    }),
    // The scheduler filters pcc has (Nova's names, from its own filter table): Tempest runs the tests of their hints.
    { section: 'compute-feature-enabled', name: 'scheduler_enabled_filters', value: FILTERS.map((f) => f.name) },
    ...flags('compute-feature-enabled', {
      resize: true,
      console_output: true,
      cold_migration: true,
      live_migration: true,
      pause: true,
      suspend: true,
      shelve: true,
      rescue: true,
      change_password: true,
      interface_attach: true,
      snapshot: true,
      swap_volume: true,
      config_drive: true,
      disk_config: true,
      enable_instance_password: true,
      volume_multiattach: true,
    }),
    ...flags('network', {
      public_network_id: cloud.publicNetworkId,
      floating_network_name: cloud.publicNetworkName,
      project_network_cidr: '10.100.0.0/16',
      project_networks_reachable: false,
    }),
    { section: 'network-feature-enabled', name: 'api_extensions', value: cloud.networkExtensions },
    ...flags('network-feature-enabled', { ipv6: true, ipv6_subnet_attributes: true, port_security: cloud.networkExtensions.includes('port-security'), floating_ips: true }),
    // Uploads of volumes to images (os-volume_upload_image) in qcow2: Tempest's volumes are blank (sparse files), a
    // few KiB in qcow2; raw works too but streams the volume's whole size of zeros.
    // The backend's capabilities as its pools report them (volume types asking for them find it): the file backend.
    ...flags('volume', { min_microversion: '3.0', max_microversion: '3.64', volume_size: 1, disk_format: 'qcow2', storage_protocol: 'nbd', vendor_name: 'Open Source' }),
    { section: 'volume-feature-enabled', name: 'api_extensions', value: cloud.volumeExtensions },
    ...flags('volume-feature-enabled', { snapshot: true, clone: true, extend_attached_volume: true, backup: true }),
    ...flags('service_available', { nova: true, neutron: true, glance: true, cinder: true }),
    ...(realGuests ? [...validation(cloud), ...realGuestFeatures()] : []),
    ...featuresOff(hypervisor),
  ]
}

/**
 * How long Tempest waits for a real guest (seconds), by the image image_ref boots, and the DHCP client Tempest
 * renews leases with in it. Both boot under TCG on a shared machine. The pcc guest image answers SSH within a
 * minute or two. A Debian cloud image runs its kernel, systemd and cloud-init first: SSH answered 313–366 s after
 * `POST /servers` in the long lane (docs/qemu.md), so the waits for SSH, ping and the metadata service (which
 * test_server_basic_ops polls for build_timeout) get 15 minutes. Tempest waits for SSH only after the server is
 * ACTIVE, which it is as soon as QEMU runs, so ssh_timeout bounds the boot. (`[compute] ready_wait` would only
 * sleep after ACTIVE on clouds without OS-EXT-STS; pcc has it.) Debian's image leases through systemd-networkd,
 * which renews by itself; Tempest only knows udhcpc and dhclient, and '' skips its renewals.
 */
const GUEST_WAITS: Record<GuestKind, { build_timeout: number; ssh_timeout: number; ping_timeout: number; dhcp_client: string }> = {
  'test-image': { build_timeout: 600, ssh_timeout: 300, ping_timeout: 180, dhcp_client: 'udhcpc' },
  'distro-image': { build_timeout: 900, ssh_timeout: 900, ping_timeout: 900, dhcp_client: '' },
}

/**
 * SSH into the real guests, as Tempest's scenarios and its validation API tests do: through a floating IP of the
 * external network (on the segment Tempest runs on, conformance/pcc.ts), with a key pair, as the image's login user
 * (its os_admin_user); the scenarios that upload an image upload the same image file, with its properties.
 */
function validation(cloud: CloudResources): Option[] {
  if (!cloud.imageFile || !cloud.sshUser || !cloud.altSshUser) throw new Error('the real-guest cloud needs the guest image file and its login users')
  const waits = GUEST_WAITS[cloud.guest]
  return [
    ...flags('validation', {
      connect_method: 'floating',
      auth_method: 'keypair',
      ip_version_for_ssh: 4,
      image_ssh_user: cloud.sshUser,
      image_alt_ssh_user: cloud.altSshUser,
      network_for_ssh: cloud.publicNetworkName,
      ping_timeout: waits.ping_timeout,
      ssh_timeout: waits.ssh_timeout,
      connect_timeout: 60,
    }),
    ...flags('scenario', { img_file: cloud.imageFile, img_disk_format: 'qcow2', img_container_format: 'bare', dhcp_client: waits.dhcp_client }),
    ...(cloud.imageProperties ? [{ section: 'scenario', name: 'img_properties', value: Object.entries(cloud.imageProperties).map(([k, v]) => `${k}:${v}`) }] : []),
  ]
}

/** The ini text of the options, one section after the other in first-seen order. */
export function renderIni(options: Option[]): string {
  const sections = new Map<string, string[]>()
  for (const o of options) {
    const value = Array.isArray(o.value) ? o.value.join(',') : String(o.value)
    if (!sections.has(o.section)) sections.set(o.section, [])
    sections.get(o.section)!.push(`${o.name} = ${value}`)
  }
  return [...sections].map(([section, lines]) => `[${section}]\n${lines.join('\n')}\n`).join('\n')
}
