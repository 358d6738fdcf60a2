/**
 * Nova's server diagnostics from the metrics samples (docs/metrics.md, "Diagnostics"): the guest's latest sample
 * and its host's. From 2.48 one shape for every hypervisor; before it, the flat libvirt-like counters Nova's
 * libvirt driver answered. A server not sampled yet answers what its flavor says, the counters null (2.48) or
 * left out (before), as Nova does while a hypervisor's statistics are not ready.
 */
import { POWER } from '../../contracts/host/compute-driver.js'
import type { FlavorSnapshot } from '../../contracts/host/compute-driver.js'
import type { GuestSample, HostSample } from '../../contracts/host/metrics.js'
import type { ServerTable } from '../storage/tables/compute.js'

const STATES: Record<number, GuestSample['state']> = { [POWER.RUNNING]: 'running', [POWER.PAUSED]: 'paused', [POWER.SHUTDOWN]: 'shutdown', [POWER.SUSPENDED]: 'suspended', [POWER.CRASHED]: 'crashed' }

/** The hypervisor as libvirt names it: KVM, or QEMU's own emulation (TCG); simulated hosts are Nova's fake. */
const HYPERVISORS: Record<string, string> = { kvm: 'kvm', tcg: 'qemu', simulated: 'fake' }

const int = (n: number) => Math.round(n)
const mib = (kb: number) => Math.round(kb / 1024)

export function standardDiagnostics(server: ServerTable, guest: GuestSample | undefined, host: HostSample | undefined, cpuShare: number | null) {
  const flavor = JSON.parse(server.flavor) as FlavorSnapshot
  return {
    state: guest?.state ?? STATES[server.power_state] ?? 'pending',
    // Nova's diagnostics name the driver, and Tempest's schema knows only Nova's; pcc runs QEMU guests as libvirt does.
    driver: 'libvirt',
    hypervisor: host ? (HYPERVISORS[host.accelerator] ?? host.accelerator) : null,
    hypervisor_os: host ? 'linux' : null,
    uptime: guest ? int(guest.uptimeS) : null,
    config_drive: server.config_drive === 1,
    num_cpus: flavor.vcpus,
    num_nics: guest?.nics.length ?? 0,
    num_disks: guest?.disks.length ?? 0,
    memory_details: { maximum: flavor.ram, used: guest ? mib(guest.memoryUsedKb) : null },
    // QEMU's process time is the guest's vCPUs together: one entry for them all, not a made-up split per vCPU.
    cpu_details: guest ? [{ id: null, time: int(guest.cpuNs), utilisation: cpuShare === null ? null : int((cpuShare / flavor.vcpus) * 100) }] : [],
    nic_details: (guest?.nics ?? []).map((n) => ({
      mac_address: n.mac,
      rx_octets: int(n.rxBytes),
      rx_errors: int(n.rxErrors),
      rx_drop: int(n.rxDrop),
      rx_packets: int(n.rxPackets),
      rx_rate: null,
      tx_octets: int(n.txBytes),
      tx_errors: int(n.txErrors),
      tx_drop: int(n.txDrop),
      tx_packets: int(n.txPackets),
      tx_rate: null,
    })),
    disk_details: (guest?.disks ?? []).map((d) => ({ read_bytes: int(d.rdBytes), read_requests: int(d.rdReqs), write_bytes: int(d.wrBytes), write_requests: int(d.wrReqs), errors_count: int(d.errors) })),
  }
}

/** Before 2.48: the flat counters of Nova's libvirt driver (memory in KiB, a disk's and a NIC's counters by name). */
export function legacyDiagnostics(server: ServerTable, guest: GuestSample | undefined): Record<string, number> {
  const flavor = JSON.parse(server.flavor) as FlavorSnapshot
  const out: Record<string, number> = { memory: flavor.ram * 1024 }
  if (!guest) return out
  out.cpu_time = int(guest.cpuNs)
  out['memory-actual'] = guest.memoryMaxKb
  out['memory-rss'] = guest.memoryUsedKb
  for (const d of guest.disks) {
    Object.assign(out, { [`${d.name}_read`]: d.rdBytes, [`${d.name}_read_req`]: d.rdReqs, [`${d.name}_write`]: d.wrBytes, [`${d.name}_write_req`]: d.wrReqs, [`${d.name}_errors`]: d.errors })
  }
  for (const [i, n] of guest.nics.entries()) {
    const nic = `nic${i}`
    Object.assign(out, {
      [`${nic}_rx`]: n.rxBytes, [`${nic}_rx_packets`]: n.rxPackets, [`${nic}_rx_errors`]: n.rxErrors, [`${nic}_rx_drop`]: n.rxDrop,
      [`${nic}_tx`]: n.txBytes, [`${nic}_tx_packets`]: n.txPackets, [`${nic}_tx_errors`]: n.txErrors, [`${nic}_tx_drop`]: n.txDrop,
    })
  }
  return out
}
