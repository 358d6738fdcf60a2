/**
 * The compute driver: what the conductor asks of a hypervisor host, whichever technology runs the guests.
 * The simulated driver implements it in process, the QEMU driver (qemu/) with real guests on an agent host; the
 * agent driver carries each call to a host's agent. Every call is idempotent: the conductor may repeat one after a
 * crash.
 */
import type { Duplex, Readable } from 'node:stream'
import type { GuestSample } from './metrics.js'

/** The flavor a guest runs with, as the host sizes it (a copy kept with the server: later flavor edits do not move it). */
export interface FlavorSnapshot {
  id: string
  name: string
  vcpus: number
  ram: number
  disk: number
  ephemeral: number
  swap: number
  rxtx_factor: number
  extra_specs: Record<string, string>
}

/** Nova power_state values (OS-EXT-STS:power_state): what a host reports of each guest. */
export const POWER = { NOSTATE: 0, RUNNING: 1, PAUSED: 3, SHUTDOWN: 4, CRASHED: 6, SUSPENDED: 7 } as const
export type PowerState = (typeof POWER)[keyof typeof POWER]

/** What the driver needs to know about a guest. */
export interface GuestSpec {
  serverId: string
  /** instance-%08x, the name the hypervisor knows the guest by. */
  instanceName: string
  flavor: FlavorSnapshot
  imageId: string | null
  hostname: string | null
  userData: string | null
  /** Volumes the guest boots with (block device mappings prepared in the build's block_device_mapping step). */
  volumes?: VolumeConnection[]
  /**
   * The image `imageId` names, as the image service describes it (formats, digests, `hw_*` properties), and the
   * images its `kernel_id` / `ramdisk_id` properties name. Set by the conductor; a real hypervisor fetches the bytes
   * by id and checks them against these digests.
   */
  image?: GuestImageRef | null
  /**
   * A guest booted from a volume (no `image`): the properties of the image the volume was made of (its
   * volume_image_metadata), whose `hw_*` the guest runs with as it would with that image. Set by the conductor.
   */
  bootVolumeImage?: Record<string, string> | null
  kernel?: GuestImageRef | null
  ramdisk?: GuestImageRef | null
  /** One NIC per port of the server, in the ports' creation order. */
  nics?: GuestNic[]
  /**
   * The config drive's files (path inside the drive → base64 content), laid out by src/server/metadata (OpenStack's
   * config-2 tree). Carries the admin password when there is one, so it lives only in the command that spawns.
   */
  configDrive?: Record<string, string>
}

/** An image as a hypervisor needs it: what to fetch and how to check and open it. */
export interface GuestImageRef {
  id: string
  diskFormat: string
  containerFormat: string
  /** Bytes, when the image service knows them. */
  size: number | null
  virtualSize: number | null
  /** Hex MD5 (Glance's legacy `checksum`). */
  checksum: string | null
  osHashAlgo: string | null
  osHashValue: string | null
  properties: Record<string, string>
}

/** A NIC of the guest: the port it plugs into (its tap is tapName(portId), src/contracts/network/names.ts). */
export interface GuestNic {
  portId: string
  macAddress: string
  networkId: string
  mtu: number | null
}

export interface GuestInfo {
  serverId: string
  /** Nova power_state integer (1 running, 3 paused, 4 shutdown, 7 suspended). */
  powerState: number
  rescued: boolean
  vcpus: number
  memoryMb: number
  diskGb: number
  /** Boots since the guest was created (each adds to the console log). */
  boots: number
  /** Volumes connected to the guest (ids), when the driver reports them. */
  volumes?: string[]
}

/** A guest's root disk copied out by the hypervisor for an image (createImage, shelve). */
export interface SnapshotData {
  diskFormat: string
  containerFormat: string
  /** The bytes, streamed into the image service. */
  data: Readable
  /** The driver already stored the bytes in the image it was given (`data` is empty). */
  stored?: boolean
  /**
   * The root disk is in Ceph and this is an RBD snapshot of it (host side only): the control plane can copy it into
   * the image inside Ceph instead of reading `data` (which starts only when read). `release` removes the snapshot
   * once it is no longer needed; reading `data` to its end releases it too.
   */
  inCeph?: { snapshot: string; release(): Promise<void> }
}

/**
 * How a hypervisor reaches a volume's bytes (Cinder's connection_info): an NBD export over TLS-PSK
 * (docs/block-storage.md). The key travels only to the host of the attachment, fetched by its agent from
 * `{base}/resmgr/v1/hosts/{id}/volume-connections/{attachment_id}`; commands carry the info without it.
 */
/** How a hypervisor reaches a volume's bytes (Cinder's connection_info): an NBD export, or RBD directly. */
export type VolumeConnectionInfo = NbdConnectionInfo | RbdConnectionInfo

/** A volume served over NBD with TLS-PSK by its storage place (file and LVM volumes; docs/block-storage.md). */
export interface NbdConnectionInfo {
  driver_volume_type: 'nbd'
  data: {
    host: string
    port: number
    /** NBD export name: `volume-<id>`, or `volume-<id>.<generation>` after an online extend. */
    export: string
    tls: 'psk'
    psk_identity: string
    /** The pre-shared key (hex); present only where the host fetched it. */
    psk_key?: string
    volume_id: string
    attachment_id: string
    /** The disk serial the guest sees (the volume id, as Nova sets it). */
    serial: string
    access_mode?: AccessMode
    /** The bytes are a LUKS container the hypervisor opens (an encrypted volume type). */
    encryption?: VolumeEncryption
  }
}

/** Cinder's attach mode: how the attachment's consumer may open the volume. */
export type AccessMode = 'rw' | 'ro'

/**
 * A Ceph volume, opened by the hypervisor's QEMU with librbd as the host's own cephx user (Cinder's RBD connection
 * info; docs/ceph.md): no export, no key in the connection.
 */
export interface RbdConnectionInfo {
  driver_volume_type: 'rbd'
  data: {
    /** `pool/image`, as Cinder names it. */
    name: string
    auth_enabled: true
    /** The hypervisor host's cephx user, without `client.`. */
    auth_username: string
    /** The host's ceph.conf (naming its keyring); filled in by the host itself. */
    conf?: string
    volume_id: string
    attachment_id: string
    serial: string
    access_mode?: AccessMode
    encryption?: VolumeEncryption
  }
}

/**
 * An encrypted volume (docs/block-storage.md, "Encrypted volumes"): its bytes are a LUKS container the hypervisor
 * opens with QEMU's luks driver, so the guest reads plaintext and the backend holds ciphertext. The passphrase,
 * like the NBD key, is present only where the host fetched it from its own endpoint; commands never carry it.
 */
export interface VolumeEncryption {
  format: 'luks'
  /** cryptsetup's name, e.g. aes-xts-plain64. */
  cipher: string
  /** Bits of the cipher's key (256 or 512 for XTS). */
  key_size: number
  /** The LUKS passphrase: the base64 text of random bytes, used as the text it is; present only where the host fetched it. */
  passphrase?: string
}

/** A block storage volume as the guest sees it. */
export interface VolumeConnection {
  volumeId: string
  /** The device name the guest sees it as (`/dev/vdb`), when known. */
  device: string | null
  /** Where the bytes are; absent for hosts that do not read volumes' bytes (simulated). */
  connection?: VolumeConnectionInfo
  /** The I/O limits the hypervisor holds the guest's disk to: the front-end QoS specs of the volume's type. */
  throttle?: VolumeThrottle
}

/**
 * The front-end QoS keys a hypervisor applies (Cinder's names, as Nova hands them to its hypervisor): bytes or
 * operations per second in total, or for reads and writes apart; `_max` is the burst a guest may reach for a
 * moment above the rate; `size_iops_sec` counts a larger request as several operations of that size.
 */
export const VOLUME_THROTTLE_KEYS = [
  'total_bytes_sec',
  'read_bytes_sec',
  'write_bytes_sec',
  'total_iops_sec',
  'read_iops_sec',
  'write_iops_sec',
  'total_bytes_sec_max',
  'read_bytes_sec_max',
  'write_bytes_sec_max',
  'total_iops_sec_max',
  'read_iops_sec_max',
  'write_iops_sec_max',
  'size_iops_sec',
] as const
export type VolumeThrottleKey = (typeof VOLUME_THROTTLE_KEYS)[number]
/** Each limit a positive integer; a key left out is no limit. */
export type VolumeThrottle = Partial<Record<VolumeThrottleKey, number>>

/**
 * What a live migration's destination prepared, for its source: which driver prepared it (hosts of different
 * drivers cannot migrate to each other) and that driver's own details (a QEMU host's NBD and migration ports).
 * JSON, since it travels between hosts through the control plane.
 */
export interface LiveMigrationHandle {
  driver: string
  [detail: string]: unknown
}

/** What a live migration's source hands its destination once the guest is there (JSON, like the handle). */
export interface LiveMigrationHandover {
  /** The tail of the guest's console log on the source, so the log reads on without a gap. */
  consoleLog?: string
  /** Boots since the guest was created. */
  boots?: number
  [detail: string]: unknown
}

/** A remote console a guest offers: its first serial port, or its graphical display (VNC, the RFB protocol). */
export type ConsoleProtocol = 'serial' | 'vnc'

/** Where a host keeps its guests' disks (Nova's `images_type`): files on the host, or RBD images in Ceph that outlive it. */
export type ImagesType = 'qcow2' | 'rbd'

export interface HostCapacity {
  vcpus: number
  memoryMb: number
  diskGb: number
  hypervisorType: string
  hypervisorVersion: number
  cpuInfo: Record<string, unknown>
  /** Absent for drivers without disks of their own (simulated). */
  imagesType?: ImagesType
}

/** What a driver can do; the API answers 409/501 for what it cannot. */
export interface DriverCapabilities {
  supportsPause: boolean
  supportsSuspend: boolean
  supportsRescue: boolean
  supportsLiveMigration: boolean
  supportsConsoleOutput: boolean
  supportsSetAdminPassword: boolean
  supportsSnapshot: boolean
}

/** A failure of the hypervisor, recorded as the server's fault. */
export class DriverError extends Error {
  override name = 'DriverError'
  constructor(
    message: string,
    /** Nova fault code: 500 for hypervisor errors. */
    readonly code = 500,
  ) {
    super(message)
  }
}

/**
 * The failure of a `liveMigrateTo` that `cancelLiveMigration` stopped: the guest runs on at the source. It crosses
 * the command channel as a message and a code, so it is recognised by both (`isLiveMigrationCancelled`).
 */
export const LIVE_MIGRATION_CANCELLED_CODE = 409
const CANCELLED_MARK = 'live migration cancelled'
export function liveMigrationCancelled(serverId: string, hostname: string): DriverError {
  return new DriverError(`${CANCELLED_MARK}: guest ${serverId} runs on at host ${hostname}`, LIVE_MIGRATION_CANCELLED_CODE)
}
export function isLiveMigrationCancelled(err: unknown): boolean {
  return err instanceof DriverError && err.code === LIVE_MIGRATION_CANCELLED_CODE && err.message.startsWith(CANCELLED_MARK)
}

export interface ComputeDriver {
  readonly type: string
  readonly capabilities: DriverCapabilities
  /**
   * Whether the driver runs real guests and so needs the spec's details (image formats and digests, NICs, the
   * config drive's files). False: the conductor leaves them out (simulated hosts).
   */
  readonly guestDetails: boolean
  capacity(): Promise<HostCapacity>
  /**
   * Every guest the host holds, with its power state, as of the host's last report: a host reached through its
   * agent answers from its heartbeat, so a guest just spawned or destroyed may show a heartbeat later.
   */
  listGuests(): Promise<GuestInfo[]>
  /**
   * A metrics sample of every guest the host runs (docs/metrics.md): cumulative CPU, disk and network counters and
   * memory. The agent sends them with its heartbeat every SAMPLE_INTERVAL_MS; a guest that is off samples as shutdown.
   */
  sampleGuests(): Promise<GuestSample[]>
  info(serverId: string): Promise<GuestInfo | undefined>
  /**
   * The work of one task state before the next (plugging networks during `networking`, attaching volumes
   * during `block_device_mapping`, the guest acknowledging `reboot_pending`…). A step's state is visible
   * for as long as this takes.
   */
  beginStep(serverId: string, taskState: string): Promise<void>
  spawn(spec: GuestSpec): Promise<GuestInfo>
  destroy(serverId: string): Promise<void>
  reboot(serverId: string, type: 'SOFT' | 'HARD'): Promise<void>
  powerOff(serverId: string): Promise<void>
  powerOn(serverId: string): Promise<void>
  pause(serverId: string): Promise<void>
  unpause(serverId: string): Promise<void>
  suspend(serverId: string): Promise<void>
  resume(serverId: string): Promise<void>
  /** Boots the guest from a rescue disk made of `image` (null: the server's own image), its own disk attached second. */
  rescue(serverId: string, image: GuestImageRef | null): Promise<void>
  unrescue(serverId: string): Promise<void>
  rebuild(spec: GuestSpec): Promise<void>
  setAdminPassword(serverId: string, password: string): Promise<void>
  /**
   * Copies the guest's root disk out (the bytes of the new image). `imageId`: the queued image the bytes are for; a
   * driver that stores them there itself (an agent uploading from its host) answers with `stored` and no bytes.
   * Without one the caller wants only the side effects and discards the bytes, which may then be none.
   */
  snapshot(serverId: string, imageName: string, imageId?: string): Promise<SnapshotData>
  /**
   * Freezes the running guest's file systems for snapshots taken elsewhere (the volume snapshots of a volume-backed
   * server's createImage, Nova's quiesce_instance), until `unquiesce`. A guest that cannot be quiesced (not running,
   * no guest agent, an agent that does not answer or fails the freeze) is a DriverError (409), the guest as it was.
   */
  quiesce(serverId: string): Promise<void>
  /** Thaws what `quiesce` froze (Nova's unquiesce_instance); a guest with nothing frozen is left as it is. */
  unquiesce(serverId: string): Promise<void>
  /**
   * Gives the guest a NIC on `nic.portId`'s tap (os-interface attach; Nova's attach_interface): a running or paused
   * guest gets it hot-plugged (a paused one finds it when it runs on), a stopped one has it from its next start. The
   * guest's recorded NICs (`nics` of its spec) follow, so restarts, stats, migrations and rebuilds see it. The tap is
   * the host network's (the port bound to this host); the driver never makes one. A NIC already there: nothing.
   */
  attachNic(serverId: string, nic: GuestNic): Promise<void>
  /**
   * Takes the NIC of port `portId` away (os-interface detach): hot-unplugged from a running guest (it lets go of the
   * device), dropped from the record of a stopped one. A paused guest cannot let go of a device: a DriverError (409).
   * A NIC (or guest) already gone: nothing.
   */
  detachNic(serverId: string, portId: string): Promise<void>
  /** Connects a volume to the guest (os-volume_attachments, boot volumes at build). */
  attachVolume(serverId: string, volume: VolumeConnection): Promise<void>
  /** Disconnects a volume (flushing the guest's writes to it); a guest that is gone has nothing to disconnect. */
  detachVolume(serverId: string, volumeId: string): Promise<void>
  /**
   * An attached volume grew (Nova's extend_volume): the guest is moved onto `volume.connection` (the export's new
   * generation, at `sizeBytes`) and told of the new size, without losing a write.
   */
  extendVolume(serverId: string, volume: VolumeConnection, sizeBytes: number): Promise<void>
  /**
   * Powers the guest off and copies its disk out for a migration or resize (source side). `toSameHost`: a resize
   * that stays on this host (the disks need not travel; the driver keeps what a revert needs).
   */
  migrateDiskAndPowerOff(serverId: string, flavor: FlavorSnapshot, toSameHost?: boolean): Promise<void>
  /** Starts a migrated or resized guest on this host (destination side); powerOn false keeps it off. */
  finishMigration(spec: GuestSpec, powerOn: boolean): Promise<void>
  /*
   * Live migration, one host's step at a time (the conductor sequences them, src/server/conductor/live-migration.ts,
   * as Nova's compute manager does): the destination prepares, the source sends the running guest, the destination
   * lets it run on, the source forgets it. Only serialisable values pass between the hosts, never a driver.
   */
  /** Destination: readies this host to receive the running guest (`spec`: as it will run here). */
  prepareLiveMigration(spec: GuestSpec): Promise<LiveMigrationHandle>
  /**
   * Source: sends the running guest to the destination that prepared `handle`; once this resolves the guest runs on
   * nothing but the destination (which still holds it paused). The source keeps its leftovers until `forget`.
   */
  liveMigrateTo(serverId: string, handle: LiveMigrationHandle): Promise<LiveMigrationHandover>
  /** Destination, after the source's step: the guest runs on here, with the history the source handed over. */
  finishLiveMigration(serverId: string, handover: LiveMigrationHandover): Promise<void>
  /** Destination, when the migration failed: nothing of the guest stays here (it runs on at the source). */
  abortLiveMigration(serverId: string): Promise<void>
  /**
   * Source, while its `liveMigrateTo` of the guest runs (the two calls run side by side): stops the copy. That
   * `liveMigrateTo` then fails with the error of `liveMigrationCancelled` once the guest runs on here as before.
   * Answers whether a copy was under way (false: nothing to stop, nothing done).
   */
  cancelLiveMigration(serverId: string): Promise<boolean>
  /**
   * Source, while its `liveMigrateTo` of the guest runs: pauses the guest here so that its memory stops changing
   * and the copy converges; the guest runs again on the destination (`finishLiveMigration`), or here if the copy
   * fails after all. Answers whether a copy was under way (false: nothing done).
   */
  forceCompleteLiveMigration(serverId: string): Promise<boolean>
  /** Recreates on this host a guest whose host died (evacuate). */
  evacuateTo(spec: GuestSpec, powerOn: boolean): Promise<void>
  /** Whole console log, or its last `lines` lines. */
  consoleOutput(serverId: string, lines?: number): Promise<string>
  /**
   * The byte stream of a guest's console, for one remote-console session: the serial port's bytes both ways
   * (`serial`), or the display's RFB protocol from its first byte (`vnc`: the server's `RFB 003.008\n` comes first).
   * Each call opens a new session; destroying the stream ends it and leaves the guest as it was. The stream ends
   * by itself when the guest stops or goes away. Fails with a DriverError when the guest is not on this host (404),
   * does not run (409), or the host has no such console (501).
   */
  openConsole(serverId: string, protocol: ConsoleProtocol): Promise<Duplex>
  /**
   * Lets go of a guest this host must no longer hold (it moved away, or its server is gone): a simulated host drops
   * its record; a QEMU host, where nothing else would ever remove it, stops its process and removes its files.
   */
  forget(serverId: string): Promise<void>
  /** Takes back guests the store says this host holds (a control-plane restart does not kill guests). */
  adopt(guests: GuestInfo[]): void
}
