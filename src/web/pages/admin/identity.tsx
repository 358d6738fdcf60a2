/** Admin → Identity: users, projects, groups (with members), roles, and role assignments (grant and revoke). */
import { call, del, get, post } from '../../api/http'
import { ActionButton, Status } from '../../ui/components'
import { FormAction, ResourceList } from '../../ui/resource-list'

interface Entity {
  id: string
  name: string
  domain_id?: string
  enabled?: boolean
  description?: string
  email?: string
  default_project_id?: string
}
interface Assignment {
  role: { id: string; name?: string }
  user?: { id: string; name?: string }
  group?: { id: string; name?: string }
  scope: { project?: { id: string; name?: string }; domain?: { id: string; name?: string }; system?: unknown }
}

const list = (collection: string) => async (signal?: AbortSignal) => (await get<Record<string, Entity[]>>('identity', `/${collection}`, signal))[collection].sort((a, b) => a.name.localeCompare(b.name))
export const listAllProjects = list('projects')
const listUsers = list('users')
const listGroups = list('groups')
const listRoles = list('roles')
const options = (entities: Entity[]) => entities.map((e) => ({ value: e.id, label: e.name }))
const patch = (path: string, body: unknown) => call('identity', path, { method: 'PATCH', body })

export function UsersPage() {
  return (
    <ResourceList<Entity>
      title="Users"
      load={listUsers}
      rowKey={(u) => u.id}
      empty="No users."
      create={{
        label: 'Create user',
        fields: async () => [
          { name: 'name', label: 'User name', required: true },
          { name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'new-password' },
          { name: 'email', label: 'E-mail' },
          { name: 'project', label: 'Primary project', type: 'select', options: options(await listAllProjects()), help: 'Given the member role there.' },
        ],
        submit: async (v) => {
          const user = (await post<{ user: Entity }>('identity', '/users', { user: { name: v.name, password: v.password, ...(v.email ? { email: v.email } : {}), ...(v.project ? { default_project_id: v.project } : {}) } })).user
          if (v.project) {
            const member = (await listRoles()).find((r) => r.name === 'member')
            if (member) await call('identity', `/projects/${v.project}/users/${user.id}/roles/${member.id}`, { method: 'PUT' })
          }
        },
      }}
      columns={[
        { label: 'Name', value: (u) => u.name },
        { label: 'E-mail', value: (u) => u.email ?? '' },
        { label: 'Enabled', value: (u) => <Status value={u.enabled === false ? 'DISABLED' : 'ENABLED'} /> },
        { label: 'ID', value: (u) => u.id },
      ]}
      actions={(u, reload) => (
        <>
          <ActionButton label={u.enabled === false ? 'Enable' : 'Disable'} run={() => patch(`/users/${u.id}`, { user: { enabled: u.enabled === false } })} onDone={reload} />
          <FormAction label="Set password" fields={() => [{ name: 'password', label: 'New password', type: 'password', required: true, autocomplete: 'new-password' }]} submit={(v) => patch(`/users/${u.id}`, { user: { password: v.password } })} onDone={reload} />
          <ActionButton label="Delete" danger confirm={`Delete user ${u.name}?`} run={() => del('identity', `/users/${u.id}`)} onDone={reload} />
        </>
      )}
    />
  )
}

export function ProjectsPage() {
  return (
    <ResourceList<Entity>
      title="Projects"
      load={listAllProjects}
      rowKey={(p) => p.id}
      empty="No projects."
      create={{ label: 'Create project', fields: () => [{ name: 'name', label: 'Name', required: true }, { name: 'description', label: 'Description' }], submit: (v) => post('identity', '/projects', { project: { name: v.name, description: v.description || '' } }) }}
      columns={[
        { label: 'Name', value: (p) => p.name },
        { label: 'Description', value: (p) => p.description ?? '' },
        { label: 'Enabled', value: (p) => <Status value={p.enabled === false ? 'DISABLED' : 'ENABLED'} /> },
        { label: 'ID', value: (p) => p.id },
      ]}
      actions={(p, reload) => (
        <>
          <ActionButton label={p.enabled === false ? 'Enable' : 'Disable'} run={() => patch(`/projects/${p.id}`, { project: { enabled: p.enabled === false } })} onDone={reload} />
          <ActionButton label="Delete" danger confirm={`Delete project ${p.name}? Its role assignments go with it.`} run={() => del('identity', `/projects/${p.id}`)} onDone={reload} />
        </>
      )}
    />
  )
}

type GroupRow = Entity & { members: Entity[] }

export function GroupsPage() {
  return (
    <ResourceList<GroupRow>
      title="Groups"
      load={async (signal) => Promise.all((await listGroups(signal)).map(async (g) => ({ ...g, members: (await get<{ users: Entity[] }>('identity', `/groups/${g.id}/users`, signal)).users })))}
      rowKey={(g) => g.id}
      empty="No groups."
      create={{ label: 'Create group', fields: () => [{ name: 'name', label: 'Name', required: true }, { name: 'description', label: 'Description' }], submit: (v) => post('identity', '/groups', { group: { name: v.name, description: v.description || '' } }) }}
      columns={[
        { label: 'Name', value: (g) => g.name },
        { label: 'Members', value: (g) => g.members.map((m) => m.name).join(', ') || 'none' },
        { label: 'Description', value: (g) => g.description ?? '' },
      ]}
      actions={(g, reload) => (
        <>
          <FormAction label="Add member" fields={async () => [{ name: 'user', label: 'User', type: 'select', required: true, options: options((await listUsers()).filter((u) => !g.members.some((m) => m.id === u.id))) }]} submit={(v) => call('identity', `/groups/${g.id}/users/${v.user}`, { method: 'PUT' })} onDone={reload} />
          {g.members.length > 0 && <FormAction label="Remove member" fields={() => [{ name: 'user', label: 'User', type: 'select', required: true, options: options(g.members) }]} submit={(v) => del('identity', `/groups/${g.id}/users/${v.user}`)} onDone={reload} />}
          <ActionButton label="Delete" danger confirm={`Delete group ${g.name}?`} run={() => del('identity', `/groups/${g.id}`)} onDone={reload} />
        </>
      )}
    />
  )
}

export function RolesPage() {
  return (
    <ResourceList<Entity>
      title="Roles"
      load={listRoles}
      rowKey={(r) => r.id}
      empty="No roles."
      create={{ label: 'Create role', fields: () => [{ name: 'name', label: 'Name', required: true }], submit: (v) => post('identity', '/roles', { role: { name: v.name } }) }}
      columns={[
        { label: 'Name', value: (r) => r.name },
        { label: 'ID', value: (r) => r.id },
      ]}
      actions={(r, reload) => <ActionButton label="Delete" danger confirm={`Delete role ${r.name}? Every assignment of it goes too.`} run={() => del('identity', `/roles/${r.id}`)} onDone={reload} />}
    />
  )
}

const scopeOf = (a: Assignment) => (a.scope.project ? `project ${a.scope.project.name ?? a.scope.project.id}` : a.scope.domain ? `domain ${a.scope.domain.name ?? a.scope.domain.id}` : 'system')
const grantPath = (a: Assignment) => `${a.scope.project ? `/projects/${a.scope.project.id}` : a.scope.domain ? `/domains/${a.scope.domain.id}` : '/system'}/${a.user ? `users/${a.user.id}` : `groups/${a.group!.id}`}/roles/${a.role.id}`

export function AssignmentsPage() {
  return (
    <ResourceList<Assignment>
      title="Role assignments"
      load={async (signal) => (await get<{ role_assignments: Assignment[] }>('identity', '/role_assignments?include_names', signal)).role_assignments}
      rowKey={(a) => grantPath(a)}
      empty="No role assignments."
      create={{
        label: 'Grant role',
        fields: async () => {
          const [users, groups, projects, roles] = await Promise.all([listUsers(), listGroups(), listAllProjects(), listRoles()])
          return [
            { name: 'who', label: 'To', type: 'select', required: true, options: [...users.map((u) => ({ value: `users/${u.id}`, label: `user ${u.name}` })), ...groups.map((g) => ({ value: `groups/${g.id}`, label: `group ${g.name}` }))] },
            { name: 'project', label: 'On project', type: 'select', required: true, options: options(projects) },
            { name: 'role', label: 'Role', type: 'select', required: true, options: options(roles), initial: roles.find((r) => r.name === 'member')?.id },
          ]
        },
        submit: (v) => call('identity', `/projects/${v.project}/${v.who}/roles/${v.role}`, { method: 'PUT' }),
      }}
      columns={[
        { label: 'Role', value: (a) => a.role.name ?? a.role.id },
        { label: 'User or group', value: (a) => (a.user ? `user ${a.user.name ?? a.user.id}` : `group ${a.group?.name ?? a.group?.id}`) },
        { label: 'Scope', value: scopeOf },
      ]}
      actions={(a, reload) => <ActionButton label="Revoke" danger confirm={`Revoke ${a.role.name} from ${a.user?.name ?? a.group?.name} on ${scopeOf(a)}?`} run={() => del('identity', grantPath(a))} onDone={reload} />}
    />
  )
}
