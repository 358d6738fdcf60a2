/**
 * Request validators compiled on a route's first request instead of at start. Fastify compiles every route's
 * schemas when the route is added: about 0.5 s of a start's 1.6 s (CPU profile, 2026-11-30), for over a thousand
 * routes of which a process often serves a few dozen (a test's server, a replica behind a balancer). A schema
 * that does not compile still fails loudly, on that route's first request; the fuzz suite sends one to every route.
 */
import { AjvCompiler, type BuildCompilerFromPool } from '@fastify/ajv-compiler'
import type { FastifySchema, FastifySchemaCompiler } from 'fastify'

/** `compile`, deferred per route part until that part is first validated. */
export function compiledOnFirstUse(compile: FastifySchemaCompiler<FastifySchema>): FastifySchemaCompiler<FastifySchema> {
  return (route) => {
    let compiled: ReturnType<typeof compile> | undefined
    const validate: ReturnType<typeof compile> = (data) => {
      compiled ??= compile(route)
      const result = compiled(data)
      // Fastify reads an Ajv validator's errors from the function it called.
      validate.errors = compiled.errors
      return result
    }
    return validate
  }
}

/** Fastify's own Ajv compiler (its options and formats), each validator compiled on first use. */
export function lazyAjvValidators(): BuildCompilerFromPool {
  const pool = AjvCompiler()
  // The package types its compiler by Ajv's schema, Fastify by the route's: the same function either way.
  type Compiler = ReturnType<BuildCompilerFromPool>
  return (externalSchemas, options) => compiledOnFirstUse(pool(externalSchemas, options) as unknown as FastifySchemaCompiler<FastifySchema>) as unknown as Compiler
}
