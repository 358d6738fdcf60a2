/**
 * The all-in-one preflight (`PCC_LOCAL_HYPERVISOR=qemu`): before anything starts, one check that this machine can
 * run what the mode promises — root (namespaces, bridges, nftables), every program and file the local agent and the
 * guest image need, named by the Debian package that brings it, and KVM or TCG — so a missing package is one clear
 * line at start instead of a silent `blank-disk-qcow2`-only image list or `nsenter: failed to execute dnsmasq` at
 * the first server create. What is needed is the table below; the probes take their roots as arguments so tests
 * can point them at a scratch directory.
 */
import { accessSync, constants, existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { findBusybox, findDropbear, findGuestAgent, findKernel } from '../../guest-image/build.js'

/** Where the probes look: the program search path, the root files are found under, the user and the KVM device. */
export interface ProbeRoots {
  path: string
  sysroot: string
  uid: number
  kvmDevice: string
}

export function machineRoots(): ProbeRoots {
  return { path: process.env.PATH ?? '', sysroot: '/', uid: process.getuid?.() ?? -1, kvmDevice: '/dev/kvm' }
}

type Probe = (roots: ProbeRoots) => boolean

/** A program the agent runs, found on the search path as it will be when spawned. */
const program = (name: string): Probe => (roots) => roots.path.split(delimiter).some((dir) => dir !== '' && isExecutable(join(dir, name)))

/** Found as the guest image builder finds it (it throws naming what is missing). */
const found = (find: (sysroot: string) => unknown): Probe => (roots) => {
  try {
    find(roots.sysroot)
    return true
  } catch {
    return false
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** What all-in-one needs, how it is found, and the Debian package that brings it (README, docs/qemu.md). */
export const REQUIREMENTS: { what: string; probe: Probe; debianPackage: string }[] = [
  { what: 'QEMU for x86-64 guests (qemu-system-x86_64)', probe: program('qemu-system-x86_64'), debianPackage: 'qemu-system-x86' },
  { what: 'disk images and volume exports (qemu-img, qemu-nbd)', probe: (r) => program('qemu-img')(r) && program('qemu-nbd')(r), debianPackage: 'qemu-utils' },
  { what: 'block exports of attached volumes (qemu-storage-daemon)', probe: program('qemu-storage-daemon'), debianPackage: 'qemu-system-common' },
  { what: 'config drives (genisoimage)', probe: program('genisoimage'), debianPackage: 'genisoimage' },
  { what: "the guest image's FAT disk (mformat, mcopy)", probe: (r) => program('mformat')(r) && program('mcopy')(r), debianPackage: 'mtools' },
  { what: "the guest image's boot loader (syslinux)", probe: program('syslinux'), debianPackage: 'syslinux' },
  { what: "the guest image's kernel (/boot/vmlinuz-* with /lib/modules)", probe: found(findKernel), debianPackage: 'linux-image-cloud-amd64' },
  { what: "the guest image's userland (a static /bin/busybox)", probe: found(findBusybox), debianPackage: 'busybox-static' },
  { what: "the guest image's SSH server (dropbear, dropbearkey)", probe: found(findDropbear), debianPackage: 'dropbear-bin' },
  { what: "the guest image's QEMU guest agent (qemu-ga)", probe: found(findGuestAgent), debianPackage: 'qemu-guest-agent' },
  { what: 'DHCP and metadata for guests (dnsmasq)', probe: program('dnsmasq'), debianPackage: 'dnsmasq-base' },
  { what: 'security groups and NAT (nft)', probe: program('nft'), debianPackage: 'nftables' },
  { what: 'cutting connections a removed rule allowed (conntrack)', probe: program('conntrack'), debianPackage: 'conntrack' },
  { what: 'bridges, taps and routes (ip)', probe: program('ip'), debianPackage: 'iproute2' },
  { what: 'network namespaces (unshare, nsenter)', probe: (r) => program('unshare')(r) && program('nsenter')(r), debianPackage: 'util-linux' },
]

export interface PreflightResult {
  /** Why the start cannot go on (one line), or undefined. */
  fault: string | undefined
  /** The one-screen summary for the operator. */
  summary: string[]
  accelerator: 'kvm' | 'tcg'
}

export function preflight(roots: ProbeRoots = machineRoots()): PreflightResult {
  const accelerator = canOpen(roots.kvmDevice) ? 'kvm' : 'tcg'
  const acceleratorLine = accelerator === 'kvm'
    ? `accelerator: KVM (${roots.kvmDevice}; the agent confirms it with a test guest and falls back to TCG if it hangs)`
    : `accelerator: TCG, software emulation 10–50× slower than KVM (no usable ${roots.kvmDevice})`
  const missing = REQUIREMENTS.filter((r) => !r.probe(roots))
  const packages = [...new Set(missing.map((r) => r.debianPackage))]
  const summary = [
    'all-in-one preflight (PCC_LOCAL_HYPERVISOR=qemu):',
    `  root: ${roots.uid === 0 ? 'yes' : 'NO'}`,
    `  packages: ${missing.length === 0 ? `all ${new Set(REQUIREMENTS.map((r) => r.debianPackage)).size} present` : `missing ${packages.join(' ')}`}`,
    ...missing.map((r) => `    ${r.debianPackage}: ${r.what}`),
    `  ${acceleratorLine}`,
  ]
  let fault: string | undefined
  if (roots.uid !== 0) {
    fault = 'PCC_LOCAL_HYPERVISOR=qemu runs guests, bridges, namespaces and nftables on this machine and needs root: start pcc-server as root (sudo -E), or without PCC_LOCAL_HYPERVISOR for simulated hosts'
  } else if (missing.length > 0) {
    fault = `PCC_LOCAL_HYPERVISOR=qemu needs Debian packages that are not installed: ${packages.join(', ')} (${missing.map((r) => r.what).join('; ')}); install them with: apt-get install ${packages.join(' ')}`
  }
  return { fault, summary, accelerator }
}

function canOpen(device: string): boolean {
  if (!existsSync(device)) return false
  try {
    accessSync(device, constants.R_OK | constants.W_OK)
    return true
  } catch {
    return false
  }
}
