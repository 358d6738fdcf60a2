/**
 * What every identity admin route shares: strict request validation (TypeBox, no type coercion of bodies, the
 * first failing field named in a 400), the policy guard, Keystone's `links` and list envelopes, query flags.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { compiledOnFirstUse } from '../../../http/validators.js'
import { badRequest } from '../../../../contracts/errors.js'
import type { AppDeps } from '../../../deps.js'
import { identityWrite } from '../../../identity/repo/write.js'
import { authorize, type PolicyTarget } from '../../../policy/rules.js'
import { IDENTITY_POLICY, type IdentityOperation } from '../../../policy/identity.policy.js'
import type { Db } from '../../../storage/store.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route needs no token (self-service password change proves itself with the old password). */
    public?: boolean
  }
}

export interface AdminContext {
  deps: AppDeps
  db: Db
  /** Runs an identity write in one transaction that also bumps the identity generation. */
  write<T>(fn: (tx: Db) => Promise<T>): Promise<T>
  /** `{self: <identity v3 URL>/<path>}` */
  link(path: string): { self: string }
  now(): number
}

export function adminContext(deps: AppDeps): AdminContext {
  return {
    deps,
    db: deps.store.db,
    write: (fn) => identityWrite(deps.store, fn),
    link: (path) => ({ self: `${deps.urls.identity}/${path}` }),
    now: () => Date.now(),
  }
}

/** Keystone's list envelope: the items under their plural name and the collection's links. */
export function collection(ctx: AdminContext, request: FastifyRequest, key: string, items: unknown[]): Record<string, unknown> {
  const path = request.url.replace(/^.*?\/v3\//, '')
  return { [key]: items, links: { self: `${ctx.deps.urls.identity}/${path}`, previous: null, next: null } }
}

export function guard(request: FastifyRequest, operation: IdentityOperation, target: PolicyTarget = {}): void {
  authorize(IDENTITY_POLICY, operation, request.principal, target)
}

const FALSE_WORDS = new Set(['0', 'false', 'f', 'no', 'n', 'off'])

/** A boolean query parameter: present means true (Keystone), except the usual false words. */
export function queryFlag(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined
  return !FALSE_WORDS.has(value.toLowerCase())
}

/** A comma-separated query list (tags filters). */
export function queryList(value: string | undefined): string[] | undefined {
  return value === undefined ? undefined : value.split(',').filter((v) => v !== '')
}

/**
 * Validates every request part with TypeBox, without coercing types: `"enabled": "yes"` or `"name": 5` is a
 * 400 naming the field, as Keystone answers, and nothing is written.
 */
export function useStrictValidation(scope: FastifyInstance): void {
  scope.setValidatorCompiler(
    compiledOnFirstUse(({ schema, httpPart }) => {
      const check = TypeCompiler.Compile(schema as TSchema)
      return (data: unknown) => {
        if (check.Check(data)) return { value: data }
        const first = check.Errors(data).First()
        const field = first?.path ? first.path.slice(1) : (httpPart ?? 'body')
        return { error: badRequest(`Invalid input for field '${field}': ${first?.message ?? 'invalid value'}.`) }
      }
    }),
  )
}
