/** pcctl's version: set by the release bundle (scripts/build-release.mjs); the package version when run from dist. */
declare const PCCTL_VERSION: string | undefined

export const VERSION: string = typeof PCCTL_VERSION === 'string' ? PCCTL_VERSION : '0.1.0-dev'
