/**
 * A serial console's output as plain text for the console log page. The guest writes for a terminal: colours,
 * cursor moves and queries (busybox's shell asks the cursor position with ESC [6n) arrive as escape sequences, which
 * a <pre> shows as stray `[6n` and `[0;32m`. The xterm page (Console tab) interprets them; this page drops them.
 */

// ECMA-48: CSI (ESC [ or the 8-bit 0x9b, parameters, intermediates, one final byte); OSC, DCS, SOS, PM and APC
// strings, ended by BEL or ST (ESC \); any other escape is ESC and one byte.
// eslint-disable-next-line no-control-regex -- matching control characters is this module's purpose
const ESCAPES = /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b[\]PX^_]|[\x90\x9d\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[ -/]*[0-~]/g
// Controls a <pre> would show as boxes or nothing useful; tab and line feed stay.
// eslint-disable-next-line no-control-regex -- as above
const CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]/g

export function terminalText(raw: string): string {
  return raw
    .replace(ESCAPES, '')
    .replace(/\r+\n/g, '\n')
    // A carriage return alone rewrites its line from the start (a progress counter): the last version wins.
    .replace(/[^\n]*\r(?!\n)/g, '')
    .replace(CONTROLS, '')
}
