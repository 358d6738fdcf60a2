/**
 * What every network operation works with: the database handle (a transaction for writes), whether the store
 * takes row locks, the clock, and who acts. Row locks (`SELECT … FOR UPDATE`) exist where the store has
 * SKIP LOCKED (PostgreSQL); SQLite serialises writers by itself, so the lock is a no-op there.
 */
import { randomUUID } from 'node:crypto'
import type { Principal } from '../auth/principal.js'
import { allows, visibilityOf, type Visibility } from '../policy/rules.js'
import { NETWORK_POLICY, type NetworkOperation, type NetworkPolicyTarget } from '../policy/network.policy.js'
import type { Db } from '../storage/store.js'
import { neutron } from './errors.js'

export interface NetCtx {
  db: Db
  /** Take row locks with FOR UPDATE (PostgreSQL). */
  rowLocks: boolean
  now: number
}

/** The caller of an API operation. `projectId` is '' for a token not scoped to a project. */
export interface Actor {
  principal: Principal
  projectId: string
  /** Whose resources lists hold (policy get:all_projects, evaluated once here); other decisions are `can`/`must`. */
  visibility: Visibility
}

export function actorOf(principal: Principal): Actor {
  return {
    principal,
    projectId: principal.scope.type === 'project' ? principal.scope.projectId : '',
    visibility: visibilityOf(allows(NETWORK_POLICY, 'get:all_projects', principal)),
  }
}

/** Lists are filtered to the actor's project (and what is shared with it) unless it sees every project's. */
export const listsAllProjects = (actor: Actor): boolean => actor.visibility === 'all_projects'

export function can(actor: Actor, op: NetworkOperation, target: NetworkPolicyTarget = {}): boolean {
  return allows(NETWORK_POLICY, op, actor.principal, target)
}

/** 403 PolicyNotAuthorized when the policy denies. */
export function must(actor: Actor, op: NetworkOperation, target: NetworkPolicyTarget = {}): void {
  if (!can(actor, op, target)) throw neutron.policyNotAuthorized(op)
}

export const newUuid = (): string => randomUUID()

/** Neutron's timestamps: ISO 8601 to the second, UTC, with Z. */
export const isoTime = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

export const parseJson = <T>(text: string): T => JSON.parse(text) as T

export const flag = (b: boolean | undefined, fallback: boolean): number => ((b ?? fallback) ? 1 : 0)

/** Splits a list into chunks small enough for an IN (…) on every dialect. */
export function chunks<T>(items: T[], size = 500): T[][] {
  const out: T[][] = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
