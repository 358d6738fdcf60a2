/**
 * Hash routing (`#/servers/<id>?tab=log`): the server serves one page at `{base}/`, so no path of the app can
 * ever shadow an API path, and the app works under any base path without server-side fallbacks.
 */
import { useEffect, useState } from 'preact/hooks'

export interface Location {
  path: string
  segments: string[]
  query: URLSearchParams
}

export function currentLocation(): Location {
  const raw = location.hash.replace(/^#/, '') || '/'
  const [path, search = ''] = raw.split('?')
  return { path, segments: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(search) }
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(currentLocation)
  useEffect(() => {
    const update = () => setLoc(currentLocation())
    addEventListener('hashchange', update)
    return () => removeEventListener('hashchange', update)
  }, [])
  return loc
}

export function href(path: string, query?: Record<string, string | undefined>): string {
  const search = new URLSearchParams(Object.entries(query ?? {}).filter((e): e is [string, string] => e[1] !== undefined)).toString()
  return `#${path}${search ? `?${search}` : ''}`
}

export function navigate(path: string, query?: Record<string, string | undefined>): void {
  location.hash = href(path, query)
}

/** Matches `/servers/:id` against a path; answers the named parameters. */
export function match(pattern: string, segments: string[]): Record<string, string> | undefined {
  const parts = pattern.split('/').filter(Boolean)
  if (parts.length !== segments.length) return undefined
  const params: Record<string, string> = {}
  for (const [i, part] of parts.entries()) {
    if (part.startsWith(':')) params[part.slice(1)] = segments[i]
    else if (part !== segments[i]) return undefined
  }
  return params
}
