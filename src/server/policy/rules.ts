/**
 * Policy in code: each service has a table (`<service>.policy.ts`) mapping an operation name to a rule, and
 * handlers call `authorize(table, operation, principal, target)` once. Rules are small named predicates, so a
 * table reads like Nova's or Keystone's policy file. Roles are hierarchical through implied roles
 * (admin ⊃ member ⊃ reader), which the principal's role list already reflects.
 */
import { AppError } from '../../contracts/errors.js'
import type { Principal } from '../auth/principal.js'

/** What an operation acts on, as far as policy needs to know. */
export interface PolicyTarget {
  projectId?: string
  userId?: string
  domainId?: string
}

export type Rule = (principal: Principal, target: PolicyTarget) => boolean

export const isAdmin: Rule = (p) => p.roles.includes('admin')
export const hasRole = (role: string): Rule => (p) => p.roles.includes(role)
/** The principal is scoped to the target's project. */
export const inProject: Rule = (p, t) => p.scope.type === 'project' && t.projectId !== undefined && p.scope.projectId === t.projectId
export const isSelf: Rule = (p, t) => t.userId !== undefined && p.userId === t.userId
export const anyOf = (...rules: Rule[]): Rule => (p, t) => rules.some((r) => r(p, t))
export const allOf = (...rules: Rule[]): Rule => (p, t) => rules.every((r) => r(p, t))
export const anyone: Rule = () => true

/** The common project rules of OpenStack's default policies. */
export const projectReaderOrAdmin = anyOf(isAdmin, allOf(hasRole('reader'), inProject))
export const projectMemberOrAdmin = anyOf(isAdmin, allOf(hasRole('member'), inProject))

export type PolicyTable<Op extends string = string> = Record<Op, Rule>

/**
 * Whose resources a domain lookup may return: `project`, the acting project's own and those it is given (public,
 * shared, granted access); `all_projects`, every project's. The route layer evaluates a named rule of its table
 * once (`visibilityOf(can(…))`) and passes the value down, so domain code filters by it and never reads roles.
 */
export type Visibility = 'project' | 'all_projects'

export const visibilityOf = (allProjects: boolean): Visibility => (allProjects ? 'all_projects' : 'project')

/**
 * Throws 403 when the rule denies. Callers that must not reveal that a resource exists (another project's
 * server) check visibility first and answer 404 themselves.
 */
export function authorize<Op extends string>(table: PolicyTable<Op>, operation: Op, principal: Principal, target: PolicyTarget = {}): void {
  if (!table[operation](principal, target)) {
    throw new AppError('forbidden', `Policy does not allow ${operation} to be performed.`)
  }
}

export function allows<Op extends string>(table: PolicyTable<Op>, operation: Op, principal: Principal, target: PolicyTarget = {}): boolean {
  return table[operation](principal, target)
}
