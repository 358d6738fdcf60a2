/**
 * /v3/domains/{id}/config and /v3/domains/config/…/default (Keystone's domain-specific configuration): the
 * whole configuration, one group, one option; the defaults. Stored and served only (identity/domain-config.ts).
 */
import type { FastifyInstance } from 'fastify'
import { Type as T, type Static } from '@sinclair/typebox'
import { badRequest, notFound } from '../../../../contracts/errors.js'
import * as domains from '../../../identity/repo/domains.repo.js'
import { changeDomainConfig, getDomainConfig } from '../../../identity/repo/domain-configs.repo.js'
import { DEFAULT_CONFIG, type DomainConfig, checkConfig, checkGroupAndOption, mergeConfig, splitSensitive, withoutPart } from '../../../identity/domain-config.js'
import { guard, type AdminContext } from './common.js'
import { documented, noBody } from '../../../http/openapi.js'

const Options = T.Record(T.String({ minLength: 1, maxLength: 255 }), T.Unknown())
/** `{config: {group: {option: value}}}` */
const ConfigBody = T.Object({ config: T.Record(T.String({ minLength: 1, maxLength: 255 }), Options) }, { additionalProperties: false })
/** `{config: {option: value}}`, one option. */
const OptionBody = T.Object({ config: T.Record(T.String({ minLength: 1, maxLength: 255 }), T.Unknown(), { minProperties: 1, maxProperties: 1 }) }, { additionalProperties: false })

const configAnswer = { type: 'object', properties: { config: { type: 'object' } }, required: ['config'] }

type DomainParams = { Params: { id: string } }
type GroupParams = { Params: { id: string; group: string } }
type OptionParams = { Params: { id: string; group: string; option: string } }

/** What the API answers of a configuration: never the sensitive options. */
const shown = (config: DomainConfig): DomainConfig => splitSensitive(config).open

export function domainConfigRoutes(scope: FastifyInstance, ctx: AdminContext): void {
  const box = ctx.deps.box
  const load = async (domainId: string): Promise<DomainConfig> => {
    await domains.getDomain(ctx.db, domainId)
    const config = await getDomainConfig(ctx.db, box, domainId)
    if (!config || Object.keys(shown(config)).length === 0) throw notFound(`Could not find domain config for domain ${domainId}.`)
    return config
  }
  const change = async (domainId: string, fn: (current: DomainConfig | undefined) => DomainConfig) => {
    await domains.getDomain(ctx.db, domainId)
    return changeDomainConfig(ctx.db, box, domainId, fn, ctx.now())
  }
  const existing = (domainId: string, current: DomainConfig | undefined): DomainConfig => {
    if (!current) throw notFound(`Could not find domain config for domain ${domainId}.`)
    return current
  }

  scope.get('/domains/config/default', documented({ summary: 'The default domain configuration', response: { 200: configAnswer } }), async (request) => {
    guard(request, 'identity:get_domain_config_default')
    return { config: DEFAULT_CONFIG }
  })
  scope.get<{ Params: { group: string } }>('/domains/config/:group/default', documented({ summary: 'The default options of a configuration group', response: { 200: configAnswer } }), async (request) => {
    guard(request, 'identity:get_domain_config_default')
    checkGroupAndOption(request.params.group)
    return { config: { [request.params.group]: DEFAULT_CONFIG[request.params.group] } }
  })
  scope.get<{ Params: { group: string; option: string } }>('/domains/config/:group/:option/default', documented({ summary: 'The default value of a configuration option', response: { 200: configAnswer } }), async (request) => {
    guard(request, 'identity:get_domain_config_default')
    const { group, option } = request.params
    checkGroupAndOption(group, option)
    if (!(option in DEFAULT_CONFIG[group])) throw notFound(`The option ${option} of group ${group} has no default that can be shown.`)
    return { config: { [option]: DEFAULT_CONFIG[group][option] } }
  })

  scope.put<DomainParams & { Body: Static<typeof ConfigBody> }>('/domains/:id/config', { ...documented({ summary: "Create (or replace) a domain's configuration", response: { 200: configAnswer, 201: configAnswer } }), schema: { body: ConfigBody } }, async (request, reply) => {
    guard(request, 'identity:create_domain_config', { domainId: request.params.id })
    checkConfig(request.body.config)
    const { config, existed } = await change(request.params.id, () => request.body.config)
    return reply.code(existed ? 200 : 201).send({ config: shown(config) })
  })
  scope.get<DomainParams>('/domains/:id/config', documented({ summary: "Show a domain's configuration", response: { 200: configAnswer } }), async (request) => {
    guard(request, 'identity:get_domain_config', { domainId: request.params.id })
    return { config: shown(await load(request.params.id)) }
  })
  scope.patch<DomainParams & { Body: Static<typeof ConfigBody> }>('/domains/:id/config', { ...documented({ summary: "Update options of a domain's configuration", response: { 200: configAnswer } }), schema: { body: ConfigBody } }, async (request) => {
    guard(request, 'identity:update_domain_config', { domainId: request.params.id })
    checkConfig(request.body.config)
    const { config } = await change(request.params.id, (current) => mergeConfig(existing(request.params.id, current), request.body.config))
    return { config: shown(config) }
  })
  scope.delete<DomainParams>('/domains/:id/config', documented({ summary: "Delete a domain's configuration", response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_domain_config', { domainId: request.params.id })
    await change(request.params.id, (current) => {
      existing(request.params.id, current)
      return {}
    })
    return reply.code(204).send()
  })

  scope.get<GroupParams>('/domains/:id/config/:group', documented({ summary: 'Show a group of a domain configuration', response: { 200: configAnswer } }), async (request) => {
    guard(request, 'identity:get_domain_config', { domainId: request.params.id })
    const { id, group } = request.params
    checkGroupAndOption(group)
    const options = shown(await load(id))[group]
    if (!options) throw notFound(`Could not find the group ${group} in the configuration of domain ${id}.`)
    return { config: { [group]: options } }
  })
  scope.patch<GroupParams & { Body: Static<typeof ConfigBody> }>('/domains/:id/config/:group', { ...documented({ summary: 'Update options of a group of a domain configuration', response: { 200: configAnswer } }), schema: { body: ConfigBody } }, async (request) => {
    guard(request, 'identity:update_domain_config', { domainId: request.params.id })
    const { id, group } = request.params
    checkGroupAndOption(group)
    const body = request.body.config
    if (Object.keys(body).length !== 1 || !(group in body)) throw badRequest(`The body must configure the group ${group} only.`)
    checkConfig(body)
    const { config } = await change(id, (current) => {
      if (!existing(id, current)[group]) throw notFound(`Could not find the group ${group} in the configuration of domain ${id}.`)
      return mergeConfig(current!, body)
    })
    return { config: shown(config) }
  })
  scope.delete<GroupParams>('/domains/:id/config/:group', documented({ summary: 'Delete a group of a domain configuration', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_domain_config', { domainId: request.params.id })
    const { id, group } = request.params
    checkGroupAndOption(group)
    await change(id, (current) => withoutPart(existing(id, current), group))
    return reply.code(204).send()
  })

  scope.get<OptionParams>('/domains/:id/config/:group/:option', documented({ summary: 'Show an option of a domain configuration', response: { 200: configAnswer } }), async (request) => {
    guard(request, 'identity:get_domain_config', { domainId: request.params.id })
    const { id, group, option } = request.params
    checkGroupAndOption(group, option)
    const options = shown(await load(id))[group]
    if (!options || !(option in options)) throw notFound(`Could not find the option ${option} of group ${group} in the configuration of domain ${id}.`)
    return { config: { [option]: options[option] } }
  })
  scope.patch<OptionParams & { Body: Static<typeof OptionBody> }>('/domains/:id/config/:group/:option', { ...documented({ summary: 'Update an option of a domain configuration', response: { 200: configAnswer } }), schema: { body: OptionBody } }, async (request) => {
    guard(request, 'identity:update_domain_config', { domainId: request.params.id })
    const { id, group, option } = request.params
    checkGroupAndOption(group, option)
    if (!(option in request.body.config)) throw badRequest(`The body must set the option ${option} only.`)
    const { config } = await change(id, (current) => {
      if (!(option in (existing(id, current)[group] ?? {}))) throw notFound(`Could not find the option ${option} of group ${group} in the configuration of domain ${id}.`)
      return mergeConfig(current!, { [group]: { [option]: request.body.config[option] } })
    })
    return { config: shown(config) }
  })
  scope.delete<OptionParams>('/domains/:id/config/:group/:option', documented({ summary: 'Delete an option of a domain configuration', response: { 204: noBody('Deleted') } }), async (request, reply) => {
    guard(request, 'identity:delete_domain_config', { domainId: request.params.id })
    const { id, group, option } = request.params
    checkGroupAndOption(group, option)
    await change(id, (current) => withoutPart(existing(id, current), group, option))
    return reply.code(204).send()
  })
}
