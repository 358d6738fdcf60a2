import { readFileSync } from 'node:fs'
import { ConfigError, SETTINGS, SETTING_ORDER, SETTING_REQUIREMENTS, type Config } from './settings.js'

/** Environment variables with this prefix must all be known settings, so a typo stops the start. */
const ENV_PREFIX = 'PCC_'
/** Variables the process reads that are not settings of the table (the config file path, test hooks). */
const OTHER_ENV = new Set(['PCC_CONFIG'])

export interface ConfigSources {
  argv: string[]
  env: NodeJS.ProcessEnv
}

/** Reads `--name value` / `--name=value` pairs; every flag must be a known setting or --config. */
function parseFlags(argv: string[]): Map<string, string> {
  const known = new Set(Object.values(SETTINGS).map((s) => s.flag))
  known.add('--config')
  const flags = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const eq = arg.indexOf('=')
    const name = eq > 0 ? arg.slice(0, eq) : arg
    if (!known.has(name)) throw new ConfigError(`unknown option ${arg} (see --help)`)
    const value: string | undefined = eq > 0 ? arg.slice(eq + 1) : argv[++i]
    if (value === undefined) throw new ConfigError(`option ${name} needs a value`)
    flags.set(name, value)
  }
  return flags
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new ConfigError(`config file ${path} cannot be read: ${(err as NodeJS.ErrnoException).code ?? String(err)}`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(`config file ${path} must hold a JSON object of settings`)
  }
  for (const key of Object.keys(parsed)) {
    if (!(key in SETTINGS)) throw new ConfigError(`config file ${path}: unknown setting "${key}"`)
  }
  return parsed as Record<string, unknown>
}

/** Resolves every setting from flags, environment and an optional JSON config file, in that precedence. */
export function loadConfig({ argv, env }: ConfigSources): Config {
  const flags = parseFlags(argv)
  const knownEnv = new Set(Object.values(SETTINGS).map((s) => s.env))
  for (const name of Object.keys(env)) {
    if (name.startsWith(ENV_PREFIX) && !knownEnv.has(name) && !OTHER_ENV.has(name)) {
      throw new ConfigError(`unknown environment setting ${name}`)
    }
  }
  const filePath = flags.get('--config') ?? env.PCC_CONFIG
  const file = filePath ? readConfigFile(filePath) : {}

  const config: Partial<Config> = {}
  for (const key of SETTING_ORDER) {
    const spec = SETTINGS[key]
    const fromFlag = flags.get(spec.flag)
    const fromEnv = env[spec.env]
    const fromFile = file[key]
    const [raw, source] =
      fromFlag !== undefined ? [fromFlag, spec.flag]
      : fromEnv !== undefined ? [fromEnv, spec.env]
      : fromFile !== undefined ? [typeof fromFile === 'string' ? fromFile : JSON.stringify(fromFile), `"${key}" in ${filePath}`]
      : [undefined, '']
    try {
      ;(config as Record<string, unknown>)[key] = raw === undefined ? spec.fallback(config) : spec.parse(raw)
    } catch (err) {
      throw new ConfigError(`invalid ${source}: ${(err as Error).message}`)
    }
  }
  for (const rule of SETTING_REQUIREMENTS) if (rule.refused(config as Config)) throw new ConfigError(rule.message)
  return config as Config
}

/** The help text printed by `pcc-server --help`, generated from the settings table. */
export function settingsHelp(): string {
  const lines = SETTING_ORDER.map((key) => {
    const s = SETTINGS[key]
    return `  ${s.flag.padEnd(22)} ${s.env.padEnd(24)} ${s.help}`
  })
  return ['Usage: pcc-server [options]', '', '  --config FILE          PCC_CONFIG               JSON file of settings (keys as below)', ...lines].join('\n')
}
