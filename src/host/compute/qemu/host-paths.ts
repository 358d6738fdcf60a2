/**
 * Where the QEMU driver keeps things on a host (root `/` on a real host, a scratch directory in tests):
 *
 * | Path | What |
 * |---|---|
 * | `<root>/var/lib/pcc/instances/<server_id>/` | `disk` (qcow2 overlay), `disk.local`, `disk.swap`, `disk.config`, `disk.rescue`, `console.log` (+ `.0`), `guest.json`, `qemu.pid`, `suspend.state` |
 * | `<root>/var/lib/pcc/images/` | the image cache: `<image_id>` and `<image_id>.json` (format, size, digest) |
 * | `<root>/run/pcc/` | sockets: `<server_id>.qmp`, `<server_id>.serial`, `<server_id>.vnc`, `<server_id>.qga` (guest agent) |
 *
 * Names carry the server id, so cleanup never guesses. The instance and image directories are root's alone
 * (`privateDir`).
 */
import { join } from 'node:path'
import { DriverError } from '../../../contracts/host/compute-driver.js'
import { privateDirSync } from '../../private-dir.js'

/**
 * A directory only root reads: instance directories hold the config drive (the admin password), the suspended
 * guest's memory and the console log; the image cache holds projects' private images. A directory an earlier
 * version made with the default mode is narrowed too; its missing parents get the default mode (src/host/private-dir.ts).
 */
export function privateDir(path: string): void {
  privateDirSync(path)
}

/** Linux's sun_path is 108 bytes including the terminating NUL. */
const UNIX_PATH_MAX = 107

export class HostPaths {
  constructor(
    readonly root: string,
    /** Where sockets go (default `<root>/run/pcc`); a short path where the root is long (unix socket paths are short). */
    private readonly runDir?: string,
  ) {}

  get instances(): string {
    return join(this.root, 'var/lib/pcc/instances')
  }

  get images(): string {
    return join(this.root, 'var/lib/pcc/images')
  }

  /** The accelerator probe's answer for this boot (accelerator.ts). */
  get accelerator(): string {
    return join(this.root, 'var/lib/pcc/accelerator.json')
  }

  get run(): string {
    return this.runDir ?? join(this.root, 'run/pcc')
  }

  instance(serverId: string): InstancePaths {
    if (!/^[0-9a-zA-Z_.-]+$/.test(serverId) || serverId.startsWith('.')) throw new DriverError(`invalid server id ${JSON.stringify(serverId)}`, 400)
    const dir = join(this.instances, serverId)
    const socket = (kind: string) => {
      const path = join(this.run, `${serverId}.${kind}`)
      if (Buffer.byteLength(path) > UNIX_PATH_MAX) throw new DriverError(`socket path ${path} is longer than ${UNIX_PATH_MAX} bytes: choose a shorter host root`)
      return path
    }
    return {
      dir,
      disk: join(dir, 'disk'),
      ephemeral: join(dir, 'disk.local'),
      swap: join(dir, 'disk.swap'),
      configDrive: join(dir, 'disk.config'),
      rescueDisk: join(dir, 'disk.rescue'),
      nvram: join(dir, 'nvram.fd'),
      consoleLog: join(dir, 'console.log'),
      record: join(dir, 'guest.json'),
      pidfile: join(dir, 'qemu.pid'),
      suspendState: join(dir, 'suspend.state'),
      qmp: socket('qmp'),
      serial: socket('serial'),
      vnc: socket('vnc'),
      qga: socket('qga'),
    }
  }

  image(imageId: string): { file: string; meta: string; part: string } {
    if (!/^[0-9a-zA-Z_-]+$/.test(imageId)) throw new DriverError(`invalid image id ${JSON.stringify(imageId)}`, 400)
    const file = join(this.images, imageId)
    return { file, meta: `${file}.json`, part: `${file}.part` }
  }
}

export interface InstancePaths {
  dir: string
  disk: string
  ephemeral: string
  swap: string
  configDrive: string
  rescueDisk: string
  /** The guest's own UEFI variable store (a copy of OVMF's template), for hw_firmware_type=uefi. */
  nvram: string
  consoleLog: string
  record: string
  pidfile: string
  suspendState: string
  qmp: string
  serial: string
  vnc: string
  /** The guest agent's channel (hw_qemu_guest_agent=yes). */
  qga: string
}
