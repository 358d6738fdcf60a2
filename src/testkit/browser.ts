/**
 * A real browser for tests: Debian's Chromium driven by playwright-core (which downloads no browser of its own).
 * Where the machine has no Chromium, `browserMissing()` says so, and the test skips naming that capability.
 */
import { existsSync } from 'node:fs'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext } from 'playwright-core'

/** Debian's wrapper script; it sources /etc/chromium.d and adds the flags this machine needs. */
export const CHROMIUM = process.env.PCC_TEST_CHROMIUM ?? '/usr/bin/chromium'

/** Why no browser test can run here, or undefined when Chromium is installed. */
export function browserMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium)`
}

// The machine has no network beyond loopback: without these Chromium keeps trying Google's services.
const QUIET_FLAGS = ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', '--disable-gpu']

export interface TestBrowser {
  browser: Browser
  /** A fresh profile (cookies, storage) for one test user. */
  newContext(options?: Parameters<Browser['newContext']>[0]): Promise<BrowserContext>
  close(): Promise<void>
}

/**
 * Starts headless Chromium with a throw-away profile; close() ends the process and removes the profile.
 * `executablePath` replaces Debian's wrapper, e.g. by a script that runs it inside a network namespace.
 */
export async function launchBrowser(options: { executablePath?: string } = {}): Promise<TestBrowser> {
  const missing = browserMissing()
  if (missing) throw new Error(missing)
  const profile = mkdtempSync(join(tmpdir(), 'pcc-chromium-'))
  const browser = await chromium.launch({ executablePath: options.executablePath ?? CHROMIUM, headless: true, args: [...QUIET_FLAGS, `--disk-cache-dir=${profile}`], timeout: 60_000 })
  return {
    browser,
    newContext: (options) => browser.newContext(options),
    async close() {
      await browser.close().catch(() => {})
      rmSync(profile, { recursive: true, force: true })
    },
  }
}

/** Debian's Firefox ESR, driven over WebDriver BiDi by puppeteer-core (Playwright drives only its own Firefox build). */
export const FIREFOX = process.env.PCC_TEST_FIREFOX ?? '/usr/bin/firefox-esr'

/** Why no Firefox test can run here, or undefined when Firefox is installed. */
export function firefoxMissing(): string | undefined {
  return existsSync(FIREFOX) ? undefined : `no Firefox at ${FIREFOX} (apt-get install firefox-esr)`
}

/** Starts headless Firefox with a throw-away profile (puppeteer-core makes and removes it). */
export async function launchFirefox(): Promise<import('puppeteer-core').Browser> {
  const missing = firefoxMissing()
  if (missing) throw new Error(missing)
  const { default: puppeteer } = await import('puppeteer-core')
  return puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, timeout: 60_000 })
}
