/**
 * `pcctl image build debian-12 [--output FILE] [--mirror M] [--upload [--name N] [--public]]`: builds a real
 * distribution cloud image on this machine from its apt mirror (src/guest-image/debian.ts: no internet, no loop
 * devices, no mounts), printing each stage with its size and the time so far, and with --upload creates the
 * Glance image with the properties that tell pcc and clients how to boot it and whom to log in as, then streams
 * the file with a progress line. For clouds whose operators cannot download Debian's own images.
 */
import { existsSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { buildDistroImage, DISTRO_IMAGES, distroImageUnavailable, glanceImageRequest, mib, type BuildStage } from '../../../guest-image/debian.js'
import type { CliContext } from '../../context.js'
import type { CommandSpec } from '../../spec.js'
import { CliFailure } from '../config.js'
import { required, stringFlag, withSession } from './common.js'
import { imageApi, upload, type Image } from './image.js'

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1).padStart(6)} s`
}

function stagePrinter(context: CliContext): (s: BuildStage) => void {
  return (s) => context.stdout.write(`[${seconds(s.elapsedMs)}] ${s.stage}: ${s.message}\n`)
}

/** A progress line every 10% (and at the end), with the rate: uploads of a few hundred MiB take a while. */
function uploadPrinter(context: CliContext, total: number): (sent: number) => void {
  const started = performance.now()
  let shown = -1
  return (sent) => {
    const tenth = Math.floor((sent / total) * 10)
    if (tenth === shown) return
    shown = tenth
    const s = (performance.now() - started) / 1000
    context.stdout.write(`[${seconds(s * 1000)}] upload: ${mib(sent)} of ${mib(total)} (${tenth * 10}%, ${mib(sent / Math.max(s, 0.001))}/s)\n`)
  }
}

export const imageBuild: CommandSpec = {
  words: ['image', 'build'],
  summary: `build a cloud image from this machine's apt mirror (${Object.keys(DISTRO_IMAGES).join(', ')}); needs root`,
  flags: [
    { name: 'output', type: 'string', help: 'the qcow2 file to write (default: ./<image>.qcow2)', placeholder: '<file>' },
    { name: 'mirror', type: 'string', help: 'Debian mirror URL or apt sources file (default: this machine\'s /etc/apt/sources.list.d/debian.sources when it names the suite)', placeholder: '<mirror>' },
    { name: 'reuse', type: 'boolean', help: 'when the --output file exists (an earlier build), upload it instead of building again' },
    { name: 'upload', type: 'boolean', help: 'create the image in the cloud (with its properties) and upload the file' },
    { name: 'name', type: 'string', help: 'name of the uploaded image (default: the image name, e.g. debian-12)', placeholder: '<name>' },
    { name: 'public', type: 'boolean', help: 'make the uploaded image public (admin only)' },
  ],
  positionals: ['image'],
  run: async (context, flags, positionals) => {
    required(positionals, ['image'])
    const recipe = DISTRO_IMAGES[positionals[0]]
    if (!recipe) throw new CliFailure(`no recipe for "${positionals[0]}": pcctl can build ${Object.keys(DISTRO_IMAGES).join(', ')}`)
    const output = resolve(stringFlag(flags, 'output') ?? `${recipe.name}.qcow2`)
    if (flags.reuse && existsSync(output)) {
      context.stdout.write(`${output}: reused (${mib(statSync(output).size)}), not built again\n`)
    } else {
      const why = distroImageUnavailable(context.env.PATH)
      if (why) throw new CliFailure(why)
      const built = await buildDistroImage({
        recipe,
        output,
        mirror: stringFlag(flags, 'mirror'),
        progress: stagePrinter(context),
        detail: context.global.verbose ? (line) => context.stderr.write(`  ${line}\n`) : undefined,
      })
      context.stdout.write(`${built.path}: kernel ${built.kernelRelease}, ${mib(built.size)}, login as ${recipe.adminUser} with the server's key pair\n`)
    }
    if (!flags.upload) return 0
    const name = stringFlag(flags, 'name') ?? recipe.name
    return withSession(context, async (session) => {
      const api = await imageApi(session)
      const body = glanceImageRequest(recipe, name, flags.public ? 'public' : 'private')
      const image = (await session.send<Image>('POST', `${api}/images`, body)).body
      context.stdout.write(`image ${image.id} (${name}) created: ${Object.entries(recipe.properties).map(([k, v]) => `${k}=${v}`).join(' ')}\n`)
      const size = statSync(output).size
      await upload(session, `${api}/images/${encodeURIComponent(image.id)}/file`, output, size, uploadPrinter(context, size))
      const after = await session.get<Image>(`${api}/images/${encodeURIComponent(image.id)}`)
      context.stdout.write(`image ${image.id} (${name}) ${String(after.status)}, ${mib(Number(after.size))}\n`)
      return after.status === 'active' ? 0 : 1
    })
  },
}
