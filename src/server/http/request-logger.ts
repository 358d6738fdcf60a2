/**
 * The per-request logger, made only when a line is written. Fastify gives every request a pino child bound to
 * its request id, and making one (copying and redacting the bindings) costs a few percent of a small request,
 * though most requests log nothing below `info` and the rest only in the one `request completed` line.
 */
import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString } from 'pino'

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

class LazyRequestLogger {
  private made?: FastifyBaseLogger

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings, this.options))
  }

  get level(): LevelWithSilentOrString {
    return this.made?.level ?? this.parent.level
  }

  set level(level: LevelWithSilentOrString) {
    this.real.level = level
  }

  isLevelEnabled(level: Level): boolean {
    return ((this.made ?? this.parent) as unknown as { isLevelEnabled(l: Level): boolean }).isLevelEnabled(level)
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options)
  }

  private write(method: LogMethod, args: unknown[]): void {
    if (!this.isLevelEnabled(method)) return
    ;(this.real[method] as (...a: unknown[]) => void)(...args)
  }

  // Methods, not arrow-function fields: fields would be six closures made for every request.
  fatal(...args: unknown[]): void {
    this.write('fatal', args)
  }
  error(...args: unknown[]): void {
    this.write('error', args)
  }
  warn(...args: unknown[]): void {
    this.write('warn', args)
  }
  info(...args: unknown[]): void {
    this.write('info', args)
  }
  debug(...args: unknown[]): void {
    this.write('debug', args)
  }
  trace(...args: unknown[]): void {
    this.write('trace', args)
  }
  silent(): void {}
}

/** Fastify's `childLoggerFactory`. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  return new LazyRequestLogger(logger, bindings, options) as unknown as FastifyBaseLogger
}
