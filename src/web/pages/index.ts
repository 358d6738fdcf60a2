/** The page table: path, title, the menu group it shows in (none: reached by links), admin-only or not. */
import type { ComponentType } from 'preact'
import { FlavorsPage } from './admin/flavors'
import { HostsPage, OnboardingPage } from './admin/hosts'
import { CloudMetricsPage, HostDetailPage } from './admin/host-metrics'
import { HypervisorsPage } from './admin/hypervisors'
import { AssignmentsPage, GroupsPage, ProjectsPage, RolesPage, UsersPage } from './admin/identity'
import { QuotasPage } from './admin/quotas'
import { VolumeTypesPage } from './admin/volume-types'
import { ApiAccessPage } from './api-access'
import { ImagesPage } from './images'
import { KeypairsPage } from './keypairs'
import { FloatingIpsPage, NetworksPage, RoutersPage, SecurityGroupsPage } from './network'
import { OverviewPage } from './overview'
import { ServerDetailPage } from './server-detail'
import { ServersPage } from './servers'
import { TopologyPage } from './topology'
import { VolumesPage } from './volumes'

export interface PageSpec {
  path: string
  title: string
  /** The menu group; pages without one are reached through links (details). */
  nav?: string
  /** Pages of one section highlight the same menu entry. */
  section: string
  admin?: boolean
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  component: ComponentType<any>
}

export const PAGES: PageSpec[] = [
  { path: '/overview', title: 'Overview', nav: 'Project', section: 'overview', component: OverviewPage },
  { path: '/servers', title: 'Servers', nav: 'Compute', section: 'servers', component: ServersPage },
  { path: '/servers/:id', title: 'Server', section: 'servers', component: ServerDetailPage },
  { path: '/images', title: 'Images', nav: 'Compute', section: 'images', component: ImagesPage },
  { path: '/keypairs', title: 'Key pairs', nav: 'Compute', section: 'keypairs', component: KeypairsPage },
  { path: '/volumes', title: 'Volumes', nav: 'Storage', section: 'volumes', component: VolumesPage },
  { path: '/networks', title: 'Networks', nav: 'Network', section: 'networks', component: NetworksPage },
  { path: '/routers', title: 'Routers', nav: 'Network', section: 'routers', component: RoutersPage },
  { path: '/floating-ips', title: 'Floating IPs', nav: 'Network', section: 'floating-ips', component: FloatingIpsPage },
  { path: '/security-groups', title: 'Security groups', nav: 'Network', section: 'security-groups', component: SecurityGroupsPage },
  { path: '/topology', title: 'Topology', nav: 'Network', section: 'topology', component: TopologyPage },
  { path: '/api-access', title: 'API Access', nav: 'Settings', section: 'api-access', component: ApiAccessPage },
  { path: '/admin/hosts', title: 'Hosts', nav: 'Admin', section: 'admin/hosts', admin: true, component: HostsPage },
  { path: '/admin/hosts/:id', title: 'Host', section: 'admin/hosts', admin: true, component: HostDetailPage },
  { path: '/admin/onboarding', title: 'Onboarding', nav: 'Admin', section: 'admin/onboarding', admin: true, component: OnboardingPage },
  { path: '/admin/hypervisors', title: 'Hypervisors', nav: 'Admin', section: 'admin/hypervisors', admin: true, component: HypervisorsPage },
  { path: '/admin/metrics', title: 'Cloud metrics', nav: 'Admin', section: 'admin/metrics', admin: true, component: CloudMetricsPage },
  { path: '/admin/flavors', title: 'Flavors', nav: 'Admin', section: 'admin/flavors', admin: true, component: FlavorsPage },
  { path: '/admin/volume-types', title: 'Volume types', nav: 'Admin', section: 'admin/volume-types', admin: true, component: VolumeTypesPage },
  { path: '/admin/quotas', title: 'Quotas', nav: 'Admin', section: 'admin/quotas', admin: true, component: QuotasPage },
  { path: '/admin/users', title: 'Users', nav: 'Identity', section: 'admin/users', admin: true, component: UsersPage },
  { path: '/admin/projects', title: 'Projects', nav: 'Identity', section: 'admin/projects', admin: true, component: ProjectsPage },
  { path: '/admin/groups', title: 'Groups', nav: 'Identity', section: 'admin/groups', admin: true, component: GroupsPage },
  { path: '/admin/roles', title: 'Roles', nav: 'Identity', section: 'admin/roles', admin: true, component: RolesPage },
  { path: '/admin/assignments', title: 'Role assignments', nav: 'Identity', section: 'admin/assignments', admin: true, component: AssignmentsPage },
]
