/**
 * Native identity commands: token issue/revoke, catalog list, project list/show, user list/show and role
 * assignment list, with openstackclient 6's columns. Shows print the resource as Keystone returns it (without
 * `links`), as osc prints keystoneclient's `_info`; lookups go by id, then by name ("No project with a name or
 * ID of 'x' exists.").
 */
import type { CommandSpec } from '../../spec.js'
import { rich } from '../../output/format.js'
import { ApiError } from '../../../client/transport.js'
import { identityRoot, type CatalogEndpoint, type Session } from '../../../client/session.js'
import { UsageError } from '../../parse.js'
import { CliFailure } from '../config.js'
import { LIST_OUTPUT_FLAGS, SHOW_OUTPUT_FLAGS, printList, printShow, query, withSession } from './common.js'
import { bodyFields, headers, rows, type Column } from './osc.js'

type Resource = Record<string, unknown>

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
      if (!token) throw new UsageError('missing argument: pcctl token revoke <token>')
      await session.send('DELETE', `${identityRoot(session.auth.authUrl)}/auth/tokens`, undefined, { 'x-subject-token': token })
      return 0
    }),
}

/** osc's EndpointsColumn: "region\n  interface: url\n" per endpoint ('<none>' without a region). */
function endpointsText(endpoints: CatalogEndpoint[]): string {
  return endpoints.map((e) => `${e.region_id || e.region || '<none>'}\n  ${e.interface}: ${e.url}\n`).join('')
}

export const catalogList: CommandSpec = {
  words: ['catalog', 'list'],
  summary: 'list services in the service catalog',
  flags: LIST_OUTPUT_FLAGS,
  run: (context, flags) =>
    withSession(context, async (session) => {
      const token = await session.login()
      const rows = (token.catalog ?? []).map((entry) => [entry.name, entry.type, rich(endpointsText(entry.endpoints), entry.endpoints)])
      return printList(context, flags, ['Name', 'Type', 'Endpoints'], rows)
    }),
}

// ---------------------------------------------------------------------------------------------------------------
// projects and users

const LONG_FLAG = { name: 'long', type: 'boolean' as const, help: 'list additional fields in output' }

// keystoneclient objects lack the attributes Keystone did not send; osc prints those as ''.
const PROJECT_COLUMNS: Column[] = [{ name: 'ID', from: 'id' }, { name: 'Name', from: 'name' }]
const PROJECT_LONG_COLUMNS: Column[] = [
  ...PROJECT_COLUMNS,
  { name: 'Domain ID', from: 'domain_id', missing: '' },
  { name: 'Description', from: 'description', missing: '' },
  { name: 'Enabled', from: 'enabled', missing: '' },
]
const USER_COLUMNS: Column[] = PROJECT_COLUMNS
const USER_LONG_COLUMNS: Column[] = [
  ...USER_COLUMNS,
  { name: 'Project', from: 'default_project_id', missing: '' },
  { name: 'Domain', from: 'domain_id', missing: '' },
  { name: 'Description', from: 'description', missing: '' },
  { name: 'Email', from: 'email', missing: '' },
  { name: 'Enabled', from: 'enabled', missing: '' },
]

interface IdentityKind {
  path: string
  singular: string
  noun: string
}
const PROJECT: IdentityKind = { path: 'projects', singular: 'project', noun: 'project' }
const USER: IdentityKind = { path: 'users', singular: 'user', noun: 'user' }

/** By id, then by exact name, as osc_lib's find_resource does with keystoneclient. */
async function findIdentity(session: Session, kind: IdentityKind, nameOrId: string): Promise<Resource> {
  const root = identityRoot(session.auth.authUrl)
  try {
    return (await session.get<Record<string, Resource>>(`${root}/${kind.path}/${encodeURIComponent(nameOrId)}`))[kind.singular]
  } catch (err) {
    if (!(err instanceof ApiError) || err.status === 401) throw err
  }
  const found = (await session.get<Record<string, Resource[]>>(`${root}/${kind.path}${query({ name: nameOrId })}`))[kind.path].filter((r) => r.name === nameOrId)
  if (found.length > 1) throw new CliFailure(`More than one ${kind.noun} exists with the name '${nameOrId}'.`)
  if (found.length === 0) throw new CliFailure(`No ${kind.noun} with a name or ID of '${nameOrId}' exists.`)
  return found[0]
}

function identityList(words: string[], kind: IdentityKind, short: Column[], long: Column[]): CommandSpec {
  return {
    words,
    summary: `list ${kind.path}`,
    flags: [...LIST_OUTPUT_FLAGS, LONG_FLAG],
    run: (context, flags) =>
      withSession(context, async (session) => {
        const body = await session.get<Record<string, Resource[]>>(`${identityRoot(session.auth.authUrl)}/${kind.path}`)
        const columns = flags.long ? long : short
        return printList(context, flags, headers(columns), rows(columns, body[kind.path]))
      }),
  }
}

function identityShow(words: string[], kind: IdentityKind): CommandSpec {
  return {
    words,
    summary: `show a ${kind.noun} by name or id`,
    flags: SHOW_OUTPUT_FLAGS,
    positionals: [kind.noun],
    run: (context, flags, [nameOrId]) =>
      withSession(context, async (session) => {
        if (!nameOrId) throw new UsageError(`missing argument: pcctl ${words.join(' ')} <${kind.noun}>`)
        return printShow(context, flags, bodyFields(await findIdentity(session, kind, nameOrId)))
      }),
  }
}

export const projectList = identityList(['project', 'list'], PROJECT, PROJECT_COLUMNS, PROJECT_LONG_COLUMNS)
export const projectShow = identityShow(['project', 'show'], PROJECT)
export const userList = identityList(['user', 'list'], USER, USER_COLUMNS, USER_LONG_COLUMNS)
export const userShow = identityShow(['user', 'show'], USER)

// ---------------------------------------------------------------------------------------------------------------
// role assignments

interface Named {
  id: string
  name?: string
  domain?: { id?: string; name?: string }
}
interface Assignment {
  role?: Named
  user?: Named
  group?: Named
  scope?: { project?: Named; domain?: Named; system?: unknown; 'OS-INHERIT:inherited_to'?: string }
}

/** osc prints a name as name@domain-name with --names, else the id. */
const who = (named: Named | undefined, names: boolean) => (named ? (names ? `${named.name}@${named.domain?.name}` : named.id) : '')

const ASSIGNMENT_COLUMNS = (names: boolean): Column<Assignment>[] => [
  { name: 'Role', from: (a) => (a.role ? (names ? a.role.name : a.role.id) : '') },
  { name: 'User', from: (a) => who(a.user, names) },
  { name: 'Group', from: (a) => (a.user ? '' : who(a.group, names)) },
  { name: 'Project', from: (a) => who(a.scope?.project, names) },
  { name: 'Domain', from: (a) => (a.scope?.project || !a.scope?.domain ? '' : names ? a.scope.domain.name : a.scope.domain.id) },
  { name: 'System', from: (a) => (a.scope?.project || a.scope?.domain || !a.scope?.system ? '' : 'all') },
  { name: 'Inherited', from: (a) => a.scope?.['OS-INHERIT:inherited_to'] === 'projects' },
]

export const roleAssignmentList: CommandSpec = {
  words: ['role', 'assignment', 'list'],
  summary: 'list role assignments',
  flags: [
    ...LIST_OUTPUT_FLAGS,
    { name: 'user', type: 'string', help: 'only assignments of this user (name or id)', placeholder: '<user>' },
    { name: 'project', type: 'string', help: 'only assignments on this project (name or id)', placeholder: '<project>' },
    { name: 'names', type: 'boolean', help: 'show names instead of ids' },
  ],
  run: (context, flags) =>
    withSession(context, async (session) => {
      const user = flags.user ? ((await findIdentity(session, USER, flags.user as string)).id as string) : undefined
      const project = flags.project ? ((await findIdentity(session, PROJECT, flags.project as string)).id as string) : undefined
      const q = query({ 'user.id': user, 'scope.project.id': project, include_names: flags.names ? 'True' : undefined })
      const { role_assignments } = await session.get<{ role_assignments: Assignment[] }>(`${identityRoot(session.auth.authUrl)}/role_assignments${q}`)
      const columns = ASSIGNMENT_COLUMNS(Boolean(flags.names))
      return printList(context, flags, headers(columns), rows(columns, role_assignments))
    }),
}

export const IDENTITY_COMMANDS: CommandSpec[] = [tokenIssue, tokenRevoke, catalogList, projectList, projectShow, userList, userShow, roleAssignmentList]
