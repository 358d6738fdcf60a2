/**
 * The serial console of a simulated guest: a byte stream that behaves like a small Linux guest's getty and
 * shell, enough for a person (or a test) to see the boot lines, log in, type a command and read its answer.
 * It echoes what is typed (with backspace, Ctrl-C and Ctrl-D as a terminal handles them), answers the commands of
 * the table below and prints new console lines (a reboot, a volume attached) as they happen.
 */
import { Duplex } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'

export interface TerminalGuest {
  /** The guest's hostname, shown in the prompts. */
  name: string
  serverId: string
  /** Boots since the guest was created. */
  boots: () => number
  /** The guest's console log so far (shown on connect, and by `dmesg`). */
  history: () => readonly string[]
}

/** A command's answer: its output lines, given the arguments and the session. */
type Command = (args: string[], session: TerminalGuest & { user: string }) => string[]

const startedAt = Date.now()

/** What the simulated shell knows; anything else is "not found", as in busybox sh. */
const COMMANDS: Record<string, Command> = {
  help: () => [`commands: ${Object.keys(COMMANDS).sort().join(' ')}`],
  hostname: (_a, s) => [s.name],
  uname: (a, s) => [a.includes('-a') ? `Linux ${s.name} 6.1.0-pcc #1 SMP PREEMPT_DYNAMIC x86_64 GNU/Linux` : 'Linux'],
  whoami: (_a, s) => [s.user],
  id: (_a, s) => [s.user === 'root' ? 'uid=0(root) gid=0(root) groups=0(root)' : `uid=1000(${s.user}) gid=1000(${s.user}) groups=1000(${s.user})`],
  pwd: (_a, s) => [home(s.user)],
  ls: () => [],
  echo: (a) => [a.join(' ')],
  date: () => [new Date().toUTCString()],
  uptime: (_a, s) => [` ${new Date().toISOString().slice(11, 19)} up ${Math.max(1, Math.round((Date.now() - startedAt) / 60_000))} min, 1 user, load average: 0.00, 0.00, 0.00 (boot ${s.boots()})`],
  cat: (a, s) => a.map((f) => (f === '/etc/hostname' ? s.name : f === '/var/lib/cloud/data/instance-id' ? s.serverId : `cat: can't open '${f}': No such file or directory`)),
  dmesg: (_a, s) => s.history().filter((l) => l.startsWith('[')),
}

const home = (user: string) => (user === 'root' ? '/root' : `/home/${user}`)

export class SimulatedTerminal extends Duplex {
  private readonly decoder = new StringDecoder('utf8')
  private user: string | undefined
  private line = ''
  /** Bytes of an escape sequence (arrow keys…) still to skip. */
  private escape = 0
  private lastWasCr = false
  /** Set once the output ended (the guest stopped, or the other side ended the session). */
  private over = false

  constructor(private readonly guest: TerminalGuest) {
    super()
    const history = guest.history()
    this.say(`${history.join('\r\n')}\r\n\r\n${this.loginPrompt()}`)
  }

  /** New console lines of the guest (a reboot's boot lines, a volume attached) while the session is open. */
  print(lines: string[]): void {
    this.say(`\r\n${lines.join('\r\n')}\r\n${this.prompt()}${this.line}`)
  }

  /** The guest rebooted: the shell session is over and the boot lines end at getty's prompt. */
  rebooted(lines: string[]): void {
    this.user = undefined
    this.line = ''
    this.say(`\r\n${lines.join('\r\n')}`)
  }

  override _read(): void {
    // Output is pushed as the session produces it.
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    for (const ch of this.decoder.write(chunk)) this.key(ch)
    done()
  }

  override _final(done: (error?: Error | null) => void): void {
    this.hangUp()
    done()
  }

  /** Ends the output, as the guest's serial port closing would. */
  hangUp(): void {
    if (this.over) return
    this.over = true
    this.push(null)
  }

  private say(text: string): void {
    if (!this.over && !this.destroyed) this.push(Buffer.from(text, 'utf8'))
  }

  private loginPrompt(): string {
    return `${this.guest.name} login: `
  }

  private prompt(): string {
    if (this.user === undefined) return this.loginPrompt()
    return `${this.user}@${this.guest.name}:~${this.user === 'root' ? '#' : '$'} `
  }

  /** One typed character, as a terminal line discipline handles it. */
  private key(ch: string): void {
    const code = ch.charCodeAt(0)
    if (this.escape > 0 || code === 0x1b) {
      // ESC [ X: skip the whole sequence (cursor keys are not simulated).
      this.escape = code === 0x1b ? 2 : this.escape - 1
      return
    }
    const wasCr = this.lastWasCr
    this.lastWasCr = ch === '\r'
    if (ch === '\n' && wasCr) return
    if (ch === '\r' || ch === '\n') return this.enter()
    if (code === 0x7f || code === 0x08) {
      if (this.line.length > 0) {
        this.line = this.line.slice(0, -1)
        this.say('\b \b')
      }
      return
    }
    if (code === 0x03) {
      this.line = ''
      return this.say(`^C\r\n${this.prompt()}`)
    }
    if (code === 0x04) {
      if (this.line === '' && this.user !== undefined) return this.logout()
      return
    }
    if (code < 0x20) return
    this.line += ch
    this.say(ch)
  }

  private enter(): void {
    const typed = this.line.trim()
    this.line = ''
    this.say('\r\n')
    if (this.user === undefined) {
      if (typed !== '') {
        this.user = typed.split(/\s+/)[0]
        this.say(`Welcome to ${this.guest.name} (pcc simulated guest ${this.guest.serverId})\r\n`)
      }
      return this.say(this.prompt())
    }
    if (typed === '') return this.say(this.prompt())
    const [name, ...args] = typed.split(/\s+/)
    if (name === 'exit' || name === 'logout') return this.logout()
    const command = COMMANDS[name]
    const out = command ? command(args, { ...this.guest, user: this.user }) : [`-sh: ${name}: not found`]
    this.say(out.map((l) => `${l}\r\n`).join('') + this.prompt())
  }

  private logout(): void {
    this.user = undefined
    this.line = ''
    this.say(`\r\n\r\n${this.loginPrompt()}`)
  }
}
