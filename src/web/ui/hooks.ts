/** Hooks every page uses: the session, data loaded from the APIs, and polling that pauses in hidden tabs. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { session, subscribe, type Session } from '../api/session'

export function useSession(): Session | undefined {
  const [value, setValue] = useState(session)
  useEffect(() => subscribe(() => setValue(session())), [])
  return value
}

export interface Async<T> {
  data?: T
  error?: Error
  loading: boolean
  reload: () => void
  setData: (data: T) => void
}

/** Loads with `load` when the dependencies change; the last load wins (earlier answers are dropped). */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: Error; loading: boolean }>({ loading: true })
  const [generation, setGeneration] = useState(0)
  useEffect(() => {
    const controller = new AbortController()
    setState((s) => ({ ...s, loading: true }))
    load(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, loading: false }),
      (error: Error) => !controller.signal.aborted && setState((s) => ({ data: s.data, error, loading: false })),
    )
    return () => controller.abort()
  }, [...deps, generation])
  const reload = useCallback(() => setGeneration((g) => g + 1), [])
  const setData = useCallback((data: T) => setState({ data, loading: false }), [])
  return { ...state, reload, setData }
}

/**
 * Calls `tick` every `intervalMs` (the interval may change between ticks), never two at once, and not while
 * the tab is hidden (it runs once as soon as the tab is shown again).
 */
export function usePoll(tick: () => Promise<void> | void, intervalMs: number | undefined): void {
  const tickRef = useRef(tick)
  tickRef.current = tick
  useEffect(() => {
    if (!intervalMs) return
    let timer: ReturnType<typeof setTimeout> | undefined
    let stopped = false
    const run = async () => {
      timer = undefined
      if (document.hidden) return
      try {
        await tickRef.current()
      } catch {
        // The next tick retries; the page shows errors of its own loads.
      }
      if (!stopped) timer = setTimeout(run, intervalMs)
    }
    const visible = () => {
      if (!document.hidden && !timer && !stopped) void run()
    }
    timer = setTimeout(run, intervalMs)
    document.addEventListener('visibilitychange', visible)
    return () => {
      stopped = true
      if (timer) clearTimeout(timer)
      document.removeEventListener('visibilitychange', visible)
    }
  }, [intervalMs])
}
