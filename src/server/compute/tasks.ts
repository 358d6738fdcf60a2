/**
 * The contract between the compute API and the conductor: the kinds of durable task the API enqueues (in the
 * same transaction as the server rows and the instance action it records) and their payloads. The API sets
 * the starting vm_state/task_state (see server-states.ts); the conductor drives the rest, records instance
 * action events, and finishes the instance action.
 */
import type { ServerActionName } from './server-states.js'

export const COMPUTE_TASK_KINDS = {
  /** Schedule and spawn every server of one create request together (multiple create). */
  build: 'compute.build',
  /** Run one accepted server action. */
  action: 'compute.action',
  /** Tear a server down and release what it holds. */
  delete: 'compute.delete',
  /** Connect, disconnect or swap a volume on the server's host (os-volume_attachments). */
  volume: 'compute.volume',
} as const

export interface BuildTaskPayload {
  serverIds: string[]
  /** The request id of the create call, which names the instance action of each server. */
  requestId: string
  /**
   * The admin password the create answered, for the config drive (Nova passes it to the compute host the same way;
   * actions' passwords ride in their params likewise). The conductor drops it from the task once the build ended.
   */
  adminPass?: string
}

export interface ActionTaskPayload {
  serverId: string
  action: ServerActionName
  /** The action's validated request body (e.g. {type: 'HARD'}, {flavorRef}, {imageRef, …}, {name, metadata}). */
  params: Record<string, unknown>
  requestId: string
  /** vm_state and power_state when the API accepted the action, for actions that end "as powered". */
  before: { vmState: string; powerState: number }
}

export interface DeleteTaskPayload {
  serverId: string
  requestId: string
}

export interface VolumeTaskPayload {
  serverId: string
  requestId: string
  operation: 'attach' | 'detach' | 'swap'
  /** The block device mapping the operation concerns. */
  bdmId: string
  /** The volume attached (attach), being detached (detach) or replaced (swap). */
  volumeId: string
  /** swap: the volume that takes its place. */
  newVolumeId?: string
}
