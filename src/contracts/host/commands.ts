/**
 * The host protocol's commands: every command the control plane sends a host's pcc-agent on its durable command
 * channel, with its arguments, its result and the protocol version that introduced it. Both ends are typed
 * against this table: the control plane's host client (src/server/hosts/agent-driver.ts, `call`) and the agent's
 * dispatchers (src/host/agent/agent.ts for compute commands, src/host/storage/storage-role.ts for `volume.*`),
 * so the compiler checks that what one side sends the other handles. Adding a command is one entry here plus its
 * two ends; a command whose arguments or meaning change gets a new entry (or a new name) and a new `since`.
 *
 * Arguments and results travel as JSON: `void` results arrive as null, optional values are sent as null.
 */
import { DriverError } from './compute-driver.js'
import type { ConsoleProtocol, FlavorSnapshot, GuestImageRef, GuestInfo, GuestNic, GuestSpec, LiveMigrationHandle, LiveMigrationHandover, VolumeConnection } from './compute-driver.js'
import type { PlaceSource } from './storage-place.js'
import type { GuestSample } from './metrics.js'

/**
 * The protocol this tree's agents speak. An agent reports it at registration and in its heartbeat's facts; the
 * control plane sends a host only commands whose `since` is at most the host's protocol (an agent that never
 * reported one speaks protocol 1).
 *
 * 1: the commands up to pcc's first onboarding release.
 * 2: live migration as per-host steps for every driver (prepareLiveMigration, liveMigrateTo, finishLiveMigration,
 *    abortLiveMigration with a driver-tagged handle); protocol 1's QEMU-only steps and `receiveGuest` are gone.
 * 3: metrics: heartbeats carry `samples` every SAMPLE_INTERVAL_MS (src/contracts/host/metrics.ts), and
 *    sampleGuests answers a sample of every guest on demand.
 * 4: cancelLiveMigration and forceCompleteLiveMigration, run on a live migration's source while its liveMigrateTo
 *    is still running (the agent runs commands side by side).
 * 5: a storage host's desired exports may name a snapshot (`snapshot_of`), served read-only (backups of snapshots).
 * 6: quiesceGuest and unquiesceGuest, the freeze and thaw of a guest's file systems around the volume snapshots of
 *    a volume-backed server's createImage (Nova's quiesce_instance / unquiesce_instance). An older agent's guests
 *    count as guests that cannot be quiesced.
 * 7: attachNic and detachNic, the hot-plug of a NIC into a guest and its hot-unplug (os-interface attach and
 *    detach, Nova's attach_interface / detach_interface). An older agent's guests keep the port bound with no NIC
 *    plugged until their next start (the control plane logs a warning).
 */
export const HOST_PROTOCOL_VERSION = 7

/** What came with a protocol without being a command: the control plane asks for it only of hosts that speak it. */
export const PROTOCOL_FEATURES = {
  snapshotExports: 5,
} as const

/**
 * How long the control plane waits for a command's outcome (`long` commands: LONG_COMMAND_FACTOR times as long)
 * before it gives up ("the host agent did not answer within 60 s"). A driver that waits for a guest (a clean stop)
 * must finish well inside it: see the QEMU driver's cleanStopMs.
 */
export const COMMAND_TIMEOUT_MS = 60_000
export const LONG_COMMAND_FACTOR = 3
/**
 * The wait for `quick` commands, reads of a guest's state. A host that takes longer is not answering: the
 * conductor's reconciliation asks each server's host in turn, and a host that had just died held it 60 s per
 * server before the host counted as DOWN, delaying every evacuation behind it.
 */
export const QUICK_COMMAND_MS = 15_000

/** How long the control plane waits for a command: `normal` COMMAND_TIMEOUT_MS, `long` (spawns, migrations,
 * snapshots) LONG_COMMAND_FACTOR times as long, `quick` (reads of a guest's state) at most QUICK_COMMAND_MS. */
export type CommandWait = 'quick' | 'normal' | 'long'

/** One command of the table: the types are carried by the entry's type only (`types` is never set). */
export interface CommandSpec<Args, Result> {
  /** The protocol version that introduced the command. */
  since: number
  wait: CommandWait
  readonly types?: { args: Args; result: Result }
}

function command<Args, Result>(since: number, wait: CommandWait = 'normal'): CommandSpec<Args, Result> {
  return { since, wait }
}

/** How long the control plane waits for a command, given the usual wait (COMMAND_TIMEOUT_MS unless configured). */
export function commandWaitMs(spec: CommandSpec<unknown, unknown>, usualMs = COMMAND_TIMEOUT_MS): number {
  const waits: Record<CommandWait, number> = { quick: Math.min(QUICK_COMMAND_MS, usualMs), normal: usualMs, long: usualMs * LONG_COMMAND_FACTOR }
  return waits[spec.wait]
}

type Server = { serverId: string }
type WithSpec = { spec: GuestSpec }
type Placed = { spec: GuestSpec; powerOn: boolean }

export const HOST_COMMANDS = {
  // Compute: the ComputeDriver calls of src/contracts/host/compute-driver.ts, executed with the agent's driver.
  info: command<Server, GuestInfo | null>(1, 'quick'),
  listGuests: command<Record<string, never>, GuestInfo[]>(1, 'quick'),
  // A build's networking step waits for the host's data plane to apply the new port (Nova bounds the same wait by
  // vif_plugging_timeout, 300 s): with many networks on a busy host one apply takes a minute.
  beginStep: command<Server & { taskState: string }, void>(1, 'long'),
  spawn: command<WithSpec, GuestInfo>(1, 'long'),
  destroy: command<Server, void>(1),
  reboot: command<Server & { type: 'SOFT' | 'HARD' }, void>(1),
  powerOff: command<Server, void>(1),
  powerOn: command<Server, void>(1),
  pause: command<Server, void>(1),
  unpause: command<Server, void>(1),
  suspend: command<Server, void>(1),
  resume: command<Server, void>(1),
  rescue: command<Server & { image: GuestImageRef | null }, void>(1),
  unrescue: command<Server, void>(1),
  rebuild: command<WithSpec, void>(1, 'long'),
  setAdminPassword: command<Server & { password: string }, void>(1),
  /** The agent uploads the bytes into image `imageId` itself, or has a disk in Ceph copied there (none: snapshot and discard). */
  snapshot: command<Server & { imageName: string; imageId: string | null }, { diskFormat: string; containerFormat: string }>(1, 'long'),
  attachVolume: command<Server & { volume: VolumeConnection }, void>(1),
  detachVolume: command<Server & { volumeId: string }, void>(1),
  extendVolume: command<Server & { volume: VolumeConnection; sizeBytes: number }, void>(1),
  migrateDiskAndPowerOff: command<Server & { flavor: FlavorSnapshot; toSameHost: boolean }, void>(1, 'long'),
  finishMigration: command<Placed, void>(1, 'long'),
  evacuateTo: command<Placed, void>(1, 'long'),
  consoleOutput: command<Server & { lines: number | null }, string>(1),
  /** The agent dials the control plane's console session `sessionId` with the guest's console. */
  openConsole: command<Server & { sessionId: string; protocol: ConsoleProtocol }, { opened: true }>(1),
  forget: command<Server, void>(1),
  prepareLiveMigration: command<WithSpec, LiveMigrationHandle>(2, 'long'),
  liveMigrateTo: command<Server & { handle: LiveMigrationHandle }, LiveMigrationHandover>(2, 'long'),
  finishLiveMigration: command<Server & { handover: LiveMigrationHandover }, void>(2),
  abortLiveMigration: command<Server, void>(2),
  sampleGuests: command<Record<string, never>, GuestSample[]>(3),
  /** true: a copy was under way and is being stopped (or converged); false: none ran, nothing done. */
  cancelLiveMigration: command<Server, boolean>(4),
  forceCompleteLiveMigration: command<Server, boolean>(4),
  /** Freezes the guest's file systems (the guest agent's fsfreeze); a DriverError when the guest cannot be quiesced. */
  quiesceGuest: command<Server, void>(6),
  /** Thaws what quiesceGuest froze; nothing to thaw is no error. */
  unquiesceGuest: command<Server, void>(6),
  /** The agent applies its network state first (the port's tap), then the driver plugs the NIC. */
  attachNic: command<Server & { nic: GuestNic }, void>(7),
  detachNic: command<Server & { portId: string }, void>(7),

  // Storage: the StoragePlace calls of src/contracts/host/storage-place.ts, executed by the agent's storage role.
  'volume.create': command<{ backend: string; volumeId: string; sizeGb: number }, void>(1),
  'volume.create_from': command<{ backend: string; volumeId: string; sizeGb: number; source: PlaceSource }, void>(1),
  'volume.extend': command<{ backend: string; volumeId: string; sizeGb: number }, void>(1),
  'volume.delete': command<{ backend: string; volumeId: string }, void>(1),
  'volume.snapshot_create': command<{ backend: string; snapshotId: string; volumeId: string }, void>(1),
  'volume.snapshot_delete': command<{ backend: string; snapshotId: string; volumeId: string }, void>(1),
  'volume.upload_image': command<{ backend: string; volumeId: string; imageId: string; diskFormat: 'raw' | 'qcow2' }, void>(1),
  /** The agent converges its exports to the control plane's desired state; answers where they listen. */
  'volume.sync_exports': command<Record<string, never>, { address: string }>(1),
} satisfies Record<string, CommandSpec<unknown, unknown>>

export type CommandName = keyof typeof HOST_COMMANDS
export type StorageCommandName = Extract<CommandName, `volume.${string}`>
export type ComputeCommandName = Exclude<CommandName, StorageCommandName>

type Types<C extends CommandName> = NonNullable<(typeof HOST_COMMANDS)[C]['types']>
export type CommandArgs<C extends CommandName> = Types<C>['args']
export type CommandResult<C extends CommandName> = Types<C>['result']

/** One end of a command on the agent: its arguments in, its result out. */
export type CommandHandler<C extends CommandName> = (args: CommandArgs<C>) => Promise<CommandResult<C>>
/** An agent's dispatcher for a set of commands: one handler for each, checked by the compiler. */
export type CommandHandlers<N extends CommandName> = { [C in N]: CommandHandler<C> }

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(HOST_COMMANDS, name)
}

/** The fault of a command the host's agent is too old for (the conductor records it as the server's fault). */
export function protocolTooOld(hostname: string, hostProtocol: number, command: CommandName): string {
  return `pcc-agent on host ${hostname} speaks protocol ${hostProtocol}; this needs ${HOST_COMMANDS[command].since}: upgrade it`
}

/**
 * A command the host's agent is too old for: a caller with a fallback (os-interface on protocol < 7) tells it apart
 * by its class; its name stays DriverError's, as every caller without one takes it.
 */
export class HostProtocolTooOld extends DriverError {
  constructor(hostname: string, hostProtocol: number, command: CommandName) {
    super(`${protocolTooOld(hostname, hostProtocol, command)} (${command})`)
  }
}
