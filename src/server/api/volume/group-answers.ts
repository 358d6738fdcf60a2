/** The description for /openapi.json of group types, groups and group snapshots (volume/group-view.ts renders them). */
import { GROUP_GATES, GROUP_SNAPSHOT_GATES } from '../../volume/group-view.js'
import { MAX_VOLUME_VERSION } from '../../volume/microversion.js'
import { action, bool, boolish, envelope, flag, gated, listOf, nstr, object, paging, query, str, strMap } from './answers.js'

const groupType = object({ id: str, name: str, description: nstr, is_public: bool, group_specs: { ...strMap, 'x-admin-only': true } }, ['id', 'name', 'description', 'is_public'])
const summary = object({ id: str, name: nstr }, ['id', 'name'])
const group = object(
  {
    id: str,
    status: str,
    availability_zone: str,
    created_at: str,
    name: nstr,
    description: nstr,
    group_type: str,
    volume_types: listOf(str),
    ...gated(GROUP_GATES),
    volumes: { ...listOf(str), description: 'with list_volume=true', 'x-microversions': { min: '3.25', max: MAX_VOLUME_VERSION } },
  },
  ['id', 'status', 'created_at', 'group_type', 'volume_types'],
)
const groupSnapshot = object(
  { id: str, group_id: str, group_type_id: str, status: str, created_at: str, name: nstr, description: nstr, ...gated(GROUP_SNAPSHOT_GATES) },
  ['id', 'group_id', 'group_type_id', 'status', 'created_at'],
)

export const GA = {
  groupTypes: envelope('group_types', listOf(groupType)),
  groupType: envelope('group_type', groupType),
  groupSpecs: envelope('group_specs', strMap),
  groups: (detail: boolean) => envelope('groups', listOf(detail ? group : summary)),
  group: envelope('group', group),
  createdGroup: envelope('group', summary),
  groupSnapshots: (detail: boolean) => envelope('group_snapshots', listOf(detail ? groupSnapshot : summary)),
  groupSnapshot: envelope('group_snapshot', groupSnapshot),
  createdGroupSnapshot: envelope('group_snapshot', object({ id: str, name: nstr, group_type_id: str }, ['id', 'name', 'group_type_id'])),
}

export const GROUP_QUERY = {
  groupTypes: query({ is_public: { type: 'string', description: 'true, false, or None for every type (admins)' }, ...paging }),
  groups: query({ all_tenants: flag, list_volume: flag, ...paging }),
  group: query({ list_volume: flag }),
  groupSnapshots: query({ all_tenants: flag, group_id: str, ...paging }),
}

const status = object({ status: str }, ['status'])

/** POST /groups/{id}/action: delete (with its volumes or not), or an admin's reset_status (3.20+). */
export const GROUP_ACTIONS = { anyOf: [action('delete', object({ 'delete-volumes': boolish })), action('reset_status', status)] }
/** POST /group_snapshots/{id}/action: an admin's reset_status (3.19+). */
export const GROUP_SNAPSHOT_ACTIONS = action('reset_status', status)
