/**
 * The shell: login when there is no session, else the header (project switcher, user, logout), the navigation
 * built from the page table (admin pages only for admins) and the page the location names.
 */
import type { ComponentType } from 'preact'
import { useEffect, useRef } from 'preact/hooks'
import { isAdmin, listProjects, logout, switchProject } from './api/session'
import { href, match, navigate, useLocation } from './router'
import { useAsync, useSession } from './ui/hooks'
import { ErrorNotice } from './ui/components'
import { LoginPage } from './pages/login'
import { PAGES, type PageSpec } from './pages'

function ProjectSwitcher() {
  const s = useSession()!
  const projects = useAsync(() => listProjects(), [s.user.id])
  const options = projects.data ?? [s.project]
  return (
    <label class="project">
      <span>Project</span>
      <select
        aria-label="Project"
        value={s.project.id}
        onChange={async (e) => {
          await switchProject(e.currentTarget.value)
          navigate('/overview')
        }}
      >
        {options.map((p) => (
          <option value={p.id}>{p.name}</option>
        ))}
      </select>
    </label>
  )
}

function Nav({ current }: { current: PageSpec | undefined }) {
  const admin = isAdmin()
  const groups = new Map<string, PageSpec[]>()
  for (const page of PAGES) {
    if (!page.nav || (page.admin && !admin)) continue
    groups.set(page.nav, [...(groups.get(page.nav) ?? []), page])
  }
  return (
    <nav aria-label="Main">
      {[...groups].map(([group, pages]) => (
        <section>
          <h2>{group}</h2>
          <ul>
            {pages.map((p) => (
              <li>
                <a href={href(p.path)} aria-current={current?.section === p.section ? 'page' : undefined}>
                  {p.title}
                </a>
              </li>
            ))}
          </ul>
        </section>
      ))}
    </nav>
  )
}

function findPage(segments: string[]): { page: PageSpec; params: Record<string, string> } | undefined {
  for (const page of PAGES) {
    const params = match(page.path, segments)
    if (params) return { page, params }
  }
  return undefined
}

export function App() {
  const s = useSession()
  const loc = useLocation()
  const main = useRef<HTMLElement>(null)
  const found = findPage(loc.segments)
  useEffect(() => {
    document.title = found ? `${found.page.title} · pcc` : 'pcc'
  }, [found?.page])
  useEffect(() => {
    if (s && loc.segments.length === 0) navigate('/overview')
  }, [s, loc.path])
  if (!s) return <LoginPage />
  const Page = found?.page.component as ComponentType<{ params: Record<string, string>; query: URLSearchParams }> | undefined
  const forbidden = found?.page.admin && !isAdmin()
  return (
    <div class="shell">
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href('/overview')}>
          pcc
        </a>
        <ProjectSwitcher />
        <span class="user">
          {s.user.name}
          {isAdmin() && <span class="badge">admin</span>}
        </span>
        <button type="button" onClick={() => void logout()}>
          Log out
        </button>
      </header>
      <Nav current={found?.page} />
      <main id="main" ref={main} tabIndex={-1}>
        {!found && loc.segments.length > 0 && <ErrorNotice title="No such page" error={new Error(`Nothing is at ${loc.path}. Use the menu to find the page you want.`)} />}
        {forbidden && <ErrorNotice title="Administrators only" error={new Error('This page needs the admin role. Switch to a project where you are an administrator.')} />}
        {Page && !forbidden && <Page key={`${s.project.id}:${loc.path}`} params={found!.params} query={loc.query} />}
      </main>
    </div>
  )
}
