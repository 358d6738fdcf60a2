/**
 * A server's networking sub-resources: /servers/{id}/ips (and /ips/{network}), /os-interface (list, show,
 * attach, detach) and /os-security-groups. Thin: the rules are in src/server/compute/server-network.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { badRequest, notFound } from '../../../contracts/errors.js'
import { interfaceAttachBody } from '../../../contracts/compute/server-interface.params.js'
import type { ComputeOperation } from '../../policy/compute.policy.js'
import { attachInterface, attachmentView, detachInterface, serverIps, serverSecurityGroupsView } from '../../compute/server-network.js'
import type { ServerRouteDeps } from './servers.js'
import { visibleServer } from './servers.js'
import { bodyObject, must, serverCaller, validate } from './context.js'
import { documented, noBody } from '../../http/openapi.js'
import { A } from '../../../contracts/compute/answers.js'
import { envelope, listOf, versioned } from '../../../contracts/compute/schemas.js'

type P1 = { Params: { id: string } }
type P2 = { Params: { id: string; sub: string } }

const DOCS = {
  ips: documented({ summary: "A server's addresses by network", response: { 200: A.addresses } }),
  networkIps: documented({ summary: "A server's addresses on one network", response: { 200: A.networkAddresses } }),
  interfaces: documented({ summary: "A server's interfaces (ports)", response: { 200: envelope('interfaceAttachments', listOf(A.interface)) } }),
  showInterface: documented({ summary: 'One interface of a server', response: { 200: envelope('interfaceAttachment', A.interface) } }),
  attach: documented({ summary: 'Attach an interface (a network, a port, or the project network)', body: versioned(interfaceAttachBody), response: { 200: envelope('interfaceAttachment', A.interface) } }),
  detach: documented({ summary: 'Detach an interface', response: { 202: noBody('Detached') } }),
  securityGroups: documented({ summary: "A server's security groups with their ingress rules", response: { 200: A.securityGroups } }),
}

export function serverNetworkRoutes(deps: ServerRouteDeps) {
  const load = async (request: FastifyRequest, id: string, op: ComputeOperation) => {
    const row = await visibleServer(deps, request, id)
    must(request, op, { projectId: row.project_id })
    return row
  }
  return async (scope: FastifyInstance): Promise<void> => {
    scope.get<P1>('/v2.1/servers/:id/ips', DOCS.ips, async (request) => {
      const row = await load(request, request.params.id, 'servers:ips')
      return { addresses: await serverIps(deps.network, row.id) }
    })
    scope.get<P2>('/v2.1/servers/:id/ips/:sub', DOCS.networkIps, async (request) => {
      const row = await load(request, request.params.id, 'servers:ips')
      const addresses = await serverIps(deps.network, row.id)
      const label = request.params.sub
      if (!Object.hasOwn(addresses, label)) throw notFound('Instance is not a member of specified network')
      return { [label]: addresses[label] }
    })

    scope.get<P1>('/v2.1/servers/:id/os-interface', DOCS.interfaces, async (request) => {
      const row = await load(request, request.params.id, 'servers:interfaces:list')
      const ports = await deps.network.serverPorts(row.id)
      return { interfaceAttachments: ports.map((p) => attachmentView(p, request.api.has('interfaceTags'))) }
    })
    scope.get<P2>('/v2.1/servers/:id/os-interface/:sub', DOCS.showInterface, async (request) => {
      const row = await load(request, request.params.id, 'servers:interfaces:list')
      const port = (await deps.network.serverPorts(row.id)).find((p) => p.id === request.params.sub)
      if (!port) throw notFound(`Instance ${row.id} does not have a port with id ${request.params.sub}`)
      return { interfaceAttachment: attachmentView(port, request.api.has('interfaceTags')) }
    })
    scope.post<P1>('/v2.1/servers/:id/os-interface', DOCS.attach, async (request) => {
      const body = request.body === undefined || request.body === null ? {} : bodyObject(request)
      validate('interfaceAttachment', request, interfaceAttachBody, body)
      const row = await load(request, request.params.id, 'servers:interfaces:create')
      const a = body.interfaceAttachment ?? {}
      if (a.tag !== undefined) throw badRequest('Tagged network interface attach is not supported by this compute service.')
      const port = await attachInterface(deps.network, deps.store.db, row, { netId: a.net_id, portId: a.port_id, fixedIp: a.fixed_ips?.[0]?.ip_address }, serverCaller(request), request.id, deps.conductor)
      return { interfaceAttachment: attachmentView(port, request.api.has('interfaceTags')) }
    })
    scope.delete<P2>('/v2.1/servers/:id/os-interface/:sub', DOCS.detach, async (request, reply) => {
      const row = await load(request, request.params.id, 'servers:interfaces:delete')
      await detachInterface(deps.network, deps.store.db, row, request.params.sub, serverCaller(request), request.id, deps.conductor)
      return reply.code(202).send()
    })

    scope.get<P1>('/v2.1/servers/:id/os-security-groups', DOCS.securityGroups, async (request) => {
      const row = await load(request, request.params.id, 'servers:security_groups:list')
      return { security_groups: await serverSecurityGroupsView(deps.network, row.id) }
    })
  }
}
