/** Native image, network and volume list commands with openstackclient 6's columns. */
import type { CommandSpec } from '../../spec.js'
import { LIST_OUTPUT_FLAGS, printList, withSession } from './common.js'

export const imageList: CommandSpec = {
  words: ['image', 'list'],
  summary: 'list images',
  flags: LIST_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => {
      const image = await session.endpoint('image')
      const rows: string[][] = []
      // Glance pages with a top-level `next`; follow it to the end as openstackclient does.
      for (let next: string | undefined = `${image}/v2/images`; next; ) {
        const body: { images: { id: string; name: string; status: string }[]; next?: string } = await session.get(next)
        rows.push(...body.images.map((i) => [i.id, i.name, i.status]))
        next = body.next ? `${image}${body.next}` : undefined
      }
      return printList(context, flags, ['ID', 'Name', 'Status'], rows)
    }),
}

export const networkList: CommandSpec = {
  words: ['network', 'list'],
  summary: 'list networks',
  flags: LIST_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => {
      const network = await session.endpoint('network')
      const { networks } = await session.get<{ networks: { id: string; name: string; subnets: string[] }[] }>(`${network}/v2.0/networks`)
      return printList(context, flags, ['ID', 'Name', 'Subnets'], networks.map((n) => [n.id, n.name, { human: n.subnets.join(', '), machine: n.subnets }]))
    }),
}

export const volumeList: CommandSpec = {
  words: ['volume', 'list'],
  summary: 'list volumes',
  flags: LIST_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => {
      const volume = await session.endpoint(['volumev3', 'block-storage'])
      const { volumes } = await session.get<{ volumes: { id: string; name: string | null; status: string; size: number; attachments: { server_id: string; device: string }[] }[] }>(
        `${volume}/volumes/detail`,
      )
      return printList(
        context,
        flags,
        ['ID', 'Name', 'Status', 'Size', 'Attached to'],
        volumes.map((v) => [v.id, v.name ?? '', v.status, v.size, v.attachments.map((a) => `Attached to ${a.server_id} on ${a.device} `).join('\n')]),
      )
    }),
}
