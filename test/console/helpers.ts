/**
 * What the browser tests of the web console share: a real pcc server, Debian's Chromium, logging in through the
 * login form, the admin's API token for checks behind the page, screenshots, and an accessibility check that
 * every form control on a page has a label.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { ADMIN_PASSWORD, type TestServer } from '../../src/testkit/harness.js'
import { LATEST, apiCall, login, type ApiReply } from '../../src/testkit/compute-api.js'

/** Screenshots go to PCC_CONSOLE_SCREENSHOTS (docs/console to refresh the docs' pictures), else to `fallback`. */
export function screenshotDir(fallback: string): string {
  const dir = process.env.PCC_CONSOLE_SCREENSHOTS ?? join(fallback, 'screenshots')
  mkdirSync(dir, { recursive: true })
  return dir
}

export async function shot(page: Page, dir: string, name: string): Promise<void> {
  // Settle transitions (dialogs, polling) so pictures show the page as a user sees it.
  await page.waitForTimeout(300)
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: false })
}

export async function logIn(page: Page, server: TestServer, user = 'admin', password = ADMIN_PASSWORD): Promise<void> {
  await page.goto(`${server.url}/`)
  await page.getByLabel('User name').fill(user)
  await page.getByLabel('Password').fill(password)
  await page.getByRole('button', { name: 'Log in' }).click()
}

/** Follows a link of the main menu. */
export async function menu(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).click()
}

/** Form controls without a label, aria-label or aria-labelledby (a screen reader could not name them). */
export async function unlabelledControls(page: Page): Promise<string[]> {
  // In-page code as a string: the tests compile without the DOM's types.
  return (await page.evaluate(`[...document.querySelectorAll('input, select, textarea')]
    .filter((control) => {
      if (control.type === 'hidden' || control.closest('[aria-hidden="true"]') || control.closest('.xterm')) return false
      const byLabel = control.labels && [...control.labels].some((l) => l.textContent.trim())
      return !byLabel && !control.getAttribute('aria-label') && !control.getAttribute('aria-labelledby')
    })
    .map((el) => el.outerHTML.slice(0, 120))`)) as string[]
}

export interface Api {
  (method: string, path: string, body?: unknown): Promise<ApiReply>
  token: string
}

/** The admin's project token for checking, behind the page, what the page did (compute at the latest microversion). */
export async function adminApi(server: TestServer): Promise<Api> {
  const { token } = await login(server.url, ADMIN_PASSWORD)
  const api = ((method: string, path: string, body?: unknown) => apiCall(`${server.url}${path}`, method, { token, body, headers: { 'openstack-api-version': `compute ${LATEST}` } })) as Api
  api.token = token
  return api
}

/** A chart as the page drew it: its value axis top, its plot box and each series' path (src/web/ui/line-chart.tsx). */
export interface DrawnChart {
  yMax: number
  plot: number[]
  paths: Record<string, string>
}

/** Reads the chart titled `title` from the page (in-page code as a string, so Playwright and Puppeteer both run it). */
export function drawnChartScript(title: string): string {
  return `(() => {
    const figure = [...document.querySelectorAll('figure.chart')].find((f) => f.querySelector('figcaption strong')?.textContent === ${JSON.stringify(title)})
    const svg = figure?.querySelector('svg')
    if (!svg) return null
    const paths = Object.fromEntries([...svg.querySelectorAll('path.series')].map((p) => [p.dataset.series, p.getAttribute('d') ?? '']))
    return { yMax: Number(svg.dataset.yMax), plot: svg.dataset.plot.split(' ').map(Number), paths }
  })()`
}

/**
 * The values a series' path stands for, turned back through the chart's value axis: one per point drawn, left to
 * right (a lone point is drawn as a zero-length piece, so its repeat is dropped).
 */
export function drawnValues(chart: DrawnChart, series: string): number[] {
  const [, top, , height] = chart.plot
  const points = [...(chart.paths[series] ?? '').matchAll(/[ML](-?[\d.]+),(-?[\d.]+)/g)].map((m) => ({ x: Number(m[1]), y: Number(m[2]) }))
  const byX = new Map(points.map((p) => [p.x, ((top + height - p.y) / height) * chart.yMax]))
  return [...byX.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v)
}

/** Whether the drawn values are the API's non-null values, in order, within half a percent of the axis. */
export function drawnMatches(chart: DrawnChart, series: string, expected: (number | null)[]): boolean {
  const want = expected.filter((v): v is number => v !== null)
  const got = drawnValues(chart, series)
  return want.length > 0 && got.length === want.length && got.every((v, i) => Math.abs(v - want[i]) <= chart.yMax * 0.005)
}
