/** The page table: path, title, the menu group it shows in (none: reached by links), admin-only or not. */
import type { ComponentType } from 'preact'
import { OverviewPage } from './overview'
import { ServersPage } from './servers'

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
]
