/**
 * NICs hot-plugged into a running QEMU guest (os-interface attach and detach; Nova's libvirt attachDevice /
 * detachDevice of an interface). A NIC is a `tap` netdev on its port's tap (tapName(portId): the host network made it
 * when the port was bound here) under a device of the image's vif model with the port's MAC, as the command line
 * gives NICs present at start (command-line.ts). Plugging: `netdev_add`, then `device_add` on a bus that takes
 * hot-plug (`pci.0` on i440FX; on q35 a free one of the empty root ports, tried from the last, since volumes take
 * them from the first). Unplugging: `device_del`, the wait for DEVICE_DELETED (the guest lets go of the device, as
 * for a volume), then `netdev_del`.
 * A NIC has the same names (nicNames, after its port) whether it was there at the start or hot-plugged.
 */
import { DriverError, type GuestNic } from '../../../contracts/host/compute-driver.js'
import { tapName } from '../../../contracts/network/names.js'
import { hotplugBuses, isQ35, nicNames } from './command-line.js'
import type { QmpSession } from './volumes.js'

/** How long a guest has to let go of an unplugged NIC (as for a volume). */
const UNPLUG_TIMEOUT_MS = 30_000

/** The ids of the guest's devices given on its command line or hot-plugged. */
async function peripherals(qmp: QmpSession): Promise<Set<string>> {
  return new Set((await qmp.execute<{ name: string }[]>('qom-list', { path: '/machine/peripheral' })).map((d) => d.name))
}

/**
 * Plugs the NIC into the running guest; nothing changes when its device is there already. Resolves with the q35
 * root port it took (undefined on i440FX, or when it was there already).
 */
export async function hotplugNic(qmp: QmpSession, nic: GuestNic, model: string, machine: string, ports: number): Promise<string | undefined> {
  const names = nicNames(nic.portId)
  if ((await peripherals(qmp)).has(names.device)) return undefined
  await qmp.execute('netdev_del', { id: names.netdev }).catch(() => {})
  await qmp.execute('netdev_add', { type: 'tap', id: names.netdev, ifname: tapName(nic.portId), script: 'no', downscript: 'no' }).catch((err: Error) => {
    throw new DriverError(`The NIC of port ${nic.portId} could not be plugged: its tap ${tapName(nic.portId)}: ${err.message}`)
  })
  // A root port has one slot the guest looks at (0): naming it makes an occupied port refuse the device, where
  // QEMU would otherwise put it in another slot of that port, which the guest never sees (measured, QEMU 7.2).
  const addr = isQ35(machine) ? { addr: '0' } : {}
  let last: Error | undefined
  for (const bus of [...hotplugBuses(machine, ports)].reverse()) {
    try {
      await qmp.execute('device_add', { driver: model, id: names.device, netdev: names.netdev, mac: nic.macAddress, bus, ...addr })
      return isQ35(machine) ? bus : undefined
    } catch (err) {
      // An occupied root port refuses the device: the next one may take it.
      last = err as Error
    }
  }
  await qmp.execute('netdev_del', { id: names.netdev }).catch(() => {})
  throw new DriverError(`The NIC of port ${nic.portId} could not be plugged: ${last?.message ?? 'no hot-plug slot'}`)
}

/**
 * The device and backend of the NIC in the running guest: by its names, else (a guest started before NICs were
 * named after their ports, as `net<i>` / `hostnet<i>`) the NIC device with its MAC; undefined when it has none.
 */
async function devicesOf(qmp: QmpSession, nic: GuestNic): Promise<{ device: string; netdev: string } | undefined> {
  const names = nicNames(nic.portId)
  const present = await peripherals(qmp)
  if (present.has(names.device)) return names
  for (const device of present) {
    const path = `/machine/peripheral/${device}`
    // Devices without a MAC (disks, the display) refuse the read: not a NIC.
    const mac = await qmp.execute<string>('qom-get', { path, property: 'mac' }).catch(() => undefined)
    if (mac?.toLowerCase() === nic.macAddress.toLowerCase()) return { device, netdev: await qmp.execute<string>('qom-get', { path, property: 'netdev' }) }
  }
  return undefined
}

/** Unplugs a NIC from the running guest: the guest lets go of the device first, then its tap backend goes. */
export async function hotunplugNic(qmp: QmpSession, nic: GuestNic): Promise<void> {
  const ids = (await devicesOf(qmp, nic)) ?? nicNames(nic.portId)
  const since = qmp.events.length
  if ((await peripherals(qmp)).has(ids.device)) {
    await qmp.execute('device_del', { id: ids.device })
    await qmp.waitEvent('DEVICE_DELETED', UNPLUG_TIMEOUT_MS, { since, match: (e) => e.data?.device === ids.device }).catch(() => {
      throw new DriverError(`The guest did not release the NIC of port ${nic.portId} within ${UNPLUG_TIMEOUT_MS / 1000} s.`)
    })
  }
  await qmp.execute('netdev_del', { id: ids.netdev }).catch(() => {})
}
