/**
 * What an export is, and the qemu-storage-daemon command line that serves it: a pure function from the
 * export's description to argv, testable without QEMU.
 *
 * One daemon per exported volume, on a port of its own, with its own TLS-PSK key file holding one line per
 * attachment. Per volume, because QEMU skips its authorization check for PSK connections (docs/block-storage.md, "Exports and keys"):
 * any identity in a daemon's key file opens every export of that daemon, so a daemon must serve exactly the
 * volume its keys are for. GnuTLS reads the key file at each handshake, so adding or removing an attachment's
 * key never restarts the daemon (measured with QEMU 7.2).
 *
 * The listening socket is made by the caller with TCP_NODELAY (accepted connections inherit it): QEMU's NBD server
 * sends a read's reply as two TLS records, and with Nagle's algorithm the second waited for the client's delayed
 * ACK — 40 ms per random read (measured: 18 reads/s from a guest, 380/s with the option).
 *
 * Generations: an NBD client can never grow (QEMU's nbd driver refuses), and the NBD server forbids resizing the
 * node it exports. So a volume extended while attached gets a second export of the same bytes at the new size
 * (generation n+1, on a fresh node); the hypervisor moves the guest's disk onto it and the old generation goes.
 */
import { join } from 'node:path'
import { exportName, type BlockdevSpec, type VolumeRef } from '../../../contracts/host/volume.js'
import { exportedRef, type WantedExport } from '../../../contracts/host/storage-place.js'

export interface ExportKey {
  /** PSK identity: `att-<attachment id>`. */
  identity: string
  /** 256-bit key, hex. */
  key: string
}

export interface ExportSpec {
  volumeId: string
  /** The node of the volume's bytes (the backend's `blockdev`). */
  blockdev: BlockdevSpec
  /** Address to listen on (the storage place's export address). */
  address: string
  port: number
  /** True for an export of a snapshot: its node is read-only, and so is the export. */
  readOnly?: boolean
  /** Generations served, ascending; the last is current. */
  generations: number[]
  /** Who may connect: one key per attachment. A volume without keys is not exported. */
  keys: ExportKey[]
}

/** The daemon's description of an export the store wants, its node made by the backend that holds the bytes. */
export function exportSpecOf(w: WantedExport, blockdev: (ref: VolumeRef) => BlockdevSpec, address: string): ExportSpec {
  const ref = exportedRef(w)
  return { volumeId: w.volumeId, blockdev: blockdev(ref), address, port: w.port, generations: w.generations, keys: w.keys, ...('snapshotId' in ref ? { readOnly: true } : {}) }
}

export function nodeName(generation: number): string {
  return `vol-g${generation}`
}

/** The lines of the daemon's PSK key file (GnuTLS `identity:hexkey`). */
export function keyFile(keys: ExportKey[]): string {
  return keys.map((k) => `${k.identity}:${k.key}\n`).join('')
}

export function daemonFiles(dir: string) {
  return { keys: join(dir, 'keys.psk'), qmp: join(dir, 'qmp.sock'), pid: join(dir, 'qsd.pid'), log: join(dir, 'qsd.log'), spec: join(dir, 'spec.json') }
}

/** The export of one generation as `block-export-add` / `--export` arguments. */
export function exportArgs(volumeId: string, generation: number, readOnly = false) {
  return { type: 'nbd', id: `e${generation}`, 'node-name': nodeName(generation), name: exportName(volumeId, generation), writable: !readOnly }
}

/** The file descriptor the daemon finds its listening socket on. */
export const LISTEN_FD = 3

export function qsdArgs(spec: ExportSpec, dir: string): string[] {
  const files = daemonFiles(dir)
  const args = ['--object', `tls-creds-psk,id=tls0,dir=${dir},endpoint=server`]
  for (const g of spec.generations) args.push('--blockdev', JSON.stringify({ ...spec.blockdev, 'node-name': nodeName(g) }))
  // The listening socket comes ready-made as fd 3 (export-manager.ts: it has TCP_NODELAY, which QEMU cannot set).
  args.push('--nbd-server', `addr.type=fd,addr.str=${LISTEN_FD},tls-creds=tls0`)
  for (const g of spec.generations) {
    const e = exportArgs(spec.volumeId, g, spec.readOnly)
    args.push('--export', `type=nbd,id=${e.id},node-name=${e['node-name']},name=${e.name},writable=${e.writable ? 'on' : 'off'}`)
  }
  args.push('--chardev', `socket,id=qmp,path=${files.qmp},server=on,wait=off`, '--monitor', 'chardev=qmp', '--pidfile', files.pid)
  return args
}
