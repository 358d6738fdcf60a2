/** Native identity commands: token issue/revoke, catalog list, project list, user list. */
import type { CommandSpec } from '../../spec.js'
import { rich } from '../../output/format.js'
import { LIST_OUTPUT_FLAGS, SHOW_OUTPUT_FLAGS, printList, printShow, withSession } from './common.js'
import { identityRoot } from '../../../client/session.js'

export const tokenIssue: CommandSpec = {
  words: ['token', 'issue'],
  summary: 'issue a new token',
  flags: SHOW_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => {
      const token = await session.login()
      return printShow(context, flags, [
        ['expires', token.expires_at],
        ['id', token.id],
        ['project_id', token.project?.id ?? ''],
        ['user_id', token.user.id],
      ])
    }),
}

export const tokenRevoke: CommandSpec = {
  words: ['token', 'revoke'],
  summary: 'revoke a token',
  flags: [],
  positionals: ['token'],
  run: (context, _flags, [token]) =>
    withSession(context, async (session) => {
      if (!token) throw new Error('give the token to revoke: pcctl token revoke <token>')
      await session.send('DELETE', `${identityRoot(session.auth.authUrl)}/auth/tokens`, undefined, { 'x-subject-token': token })
      return 0
    }),
}

export const catalogList: CommandSpec = {
  words: ['catalog', 'list'],
  summary: 'list services in the service catalog',
  flags: LIST_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => {
      const token = await session.login()
      const rows = (token.catalog ?? []).map((entry) => {
        const human = entry.endpoints.map((e) => `${e.region_id ?? e.region ?? ''}\n  ${e.interface}: ${e.url}`).join('\n')
        return [entry.name, entry.type, rich(human, entry.endpoints)]
      })
      return printList(context, flags, ['Name', 'Type', 'Endpoints'], rows)
    }),
}

function simpleList(words: string[], summary: string, path: string, key: string): CommandSpec {
  return {
    words,
    summary,
    flags: LIST_OUTPUT_FLAGS,
    run: (context, flags) =>
      withSession(context, async (session) => {
        const body = await session.get<Record<string, { id: string; name: string }[]>>(`${identityRoot(session.auth.authUrl)}${path}`)
        return printList(context, flags, ['ID', 'Name'], body[key].map((r) => [r.id, r.name]))
      }),
  }
}

export const projectList = simpleList(['project', 'list'], 'list projects', '/projects', 'projects')
export const userList = simpleList(['user', 'list'], 'list users', '/users', 'users')
