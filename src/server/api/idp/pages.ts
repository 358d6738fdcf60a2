/**
 * The IdP's HTML pages (login, TOTP code, consent, device code entry, results and errors), rendered on the
 * server from the views of oidc/browser-flow.ts. Self-contained: one small stylesheet, no script. Accessible:
 * every field has a label, errors are announced (role="alert") and tied to their fields (aria-describedby),
 * the first field has focus, everything works with the keyboard, autocomplete hints let password managers
 * and one-time-code autofill help.
 */
import type { Page } from '../../oidc/browser-flow.js'

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** What each scope lets the application see, in the user's words (consent page). */
const SCOPE_TEXT: Record<string, string> = {
  openid: 'Know who you are (a stable user id)',
  email: 'See your e-mail address',
  profile: 'See your user name',
  groups: 'See your groups and your roles on projects',
  offline_access: 'Stay signed in until you sign out or an administrator ends it',
}

function layout(base: string, title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escape(title)} · pcc</title>
<link rel="stylesheet" href="${base}/static/style.css">
</head>
<body>
<main class="card">
<p class="brand">pcc</p>
<h1>${escape(title)}</h1>
${body}
</main>
</body>
</html>
`
}

const alert = (error: string | undefined) => (error ? `<p class="error" role="alert" id="error">${escape(error)}</p>\n` : '')
const invalid = (error: string | undefined) => (error ? ' aria-invalid="true" aria-describedby="error"' : '')
const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escape(value)}">`

/** One renderer per page. */
const RENDERERS: { [P in Page as P['name']]: (base: string, page: P) => string } = {
  login: (base, p) =>
    layout(
      base,
      'Sign in',
      `<p>to continue to <strong>${escape(p.client)}</strong></p>
${alert(p.error)}<form method="post" action="${base}/login">
${hidden('req', p.req)}
<label for="username">Username or e-mail</label>
<input id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="255" value="${escape(p.username ?? '')}"${p.username ? '' : ' autofocus'}${invalid(p.error)}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="4096"${p.username ? ' autofocus' : ''}${invalid(p.error)}>
<button type="submit">Sign in</button>
</form>`,
    ),
  totp: (base, p) =>
    layout(
      base,
      'Enter your code',
      `<p>Your account needs a second step: the 6-digit code of your authenticator app.</p>
${alert(p.error)}<form method="post" action="${base}/login/totp">
${hidden('req', p.req)}
<label for="totp">Authentication code</label>
<input id="totp" name="totp" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" minlength="6" maxlength="6" required autofocus${invalid(p.error)}>
<button type="submit">Verify</button>
</form>`,
    ),
  consent: (base, p) =>
    layout(
      base,
      p.device ? 'Approve a device' : 'Allow access',
      `${p.device ? `<p class="warning">A device asks to sign in as you through <strong>${escape(p.client)}</strong>. Approve only if you started this yourself, on a device you trust.</p>` : `<p><strong>${escape(p.client)}</strong> wants to:</p>`}
<ul>
${p.scopes.filter((s) => SCOPE_TEXT[s]).map((s) => `<li>${escape(SCOPE_TEXT[s])}</li>`).join('\n')}
</ul>
<p>Signed in as <strong>${escape(p.user)}</strong>.</p>
<form method="post" action="${base}/approval">
${hidden('req', p.req)}
<div class="actions">
<button type="submit" name="approval" value="approve" autofocus>${p.device ? 'Approve' : 'Allow'}</button>
<button type="submit" name="approval" value="deny" class="secondary">Deny</button>
</div>
</form>`,
    ),
  oob: (base, p) =>
    layout(
      base,
      'Copy this code',
      `<p>Paste this code into the application that asked you to sign in. It works once, for a few minutes.</p>
<p><label for="code">Code</label><input id="code" class="code" readonly value="${escape(p.code)}" autofocus></p>`,
    ),
  device: (base, p) =>
    layout(
      base,
      'Connect a device',
      `<p>Enter the code your device shows (for example <span class="code">BCDF-GHJK</span>).</p>
${alert(p.error)}<form method="post" action="${base}/device">
<label for="user_code">Device code</label>
<input id="user_code" name="user_code" class="code" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="32" value="${escape(p.userCode ?? '')}" autofocus${invalid(p.error)}>
<button type="submit">Continue</button>
</form>`,
    ),
  'device-done': (base, p) =>
    layout(
      base,
      p.approved ? 'Device connected' : 'Request denied',
      p.approved
        ? `<p role="status">You approved <strong>${escape(p.client)}</strong>. Return to your device: it signs in within a few seconds.</p>`
        : `<p role="status">The device gets no access. You can close this page.</p>`,
    ),
  error: (base, p) => layout(base, p.title, `<p class="error" role="alert">${escape(p.message)}</p>`),
}

/** The HTML of a page; `base` is the issuer's path (`/idp`), for links that work from every page. */
export function renderPage(base: string, page: Page): string {
  return (RENDERERS[page.name] as (base: string, page: Page) => string)(base, page)
}

/** The one stylesheet: readable, high contrast, a visible focus ring, no external resources. */
export const STYLESHEET = `
*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:#eef1f5;color:#1b1f24;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.card{width:100%;max-width:26rem;margin:1rem;padding:2rem;background:#fff;border-radius:.5rem;box-shadow:0 1px 3px rgba(0,0,0,.15)}
.brand{margin:0 0 .5rem;font-weight:700;letter-spacing:.05em;color:#1d4ed8}
h1{margin:0 0 1rem;font-size:1.5rem}
label{display:block;margin:1rem 0 .25rem;font-weight:600}
input{width:100%;padding:.6rem .7rem;border:1px solid #6b7280;border-radius:.375rem;font:inherit}
input[aria-invalid=true]{border-color:#b91c1c}
button{margin-top:1.25rem;padding:.6rem 1.2rem;border:0;border-radius:.375rem;background:#1d4ed8;color:#fff;font:inherit;font-weight:600;cursor:pointer}
button.secondary{background:#fff;color:#1d4ed8;border:1px solid #1d4ed8}
.actions{display:flex;gap:.75rem}
:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
.error{padding:.6rem .8rem;border-left:4px solid #b91c1c;background:#fef2f2;color:#7f1d1d}
.warning{padding:.6rem .8rem;border-left:4px solid #b45309;background:#fffbeb}
.code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;letter-spacing:.1em}
`
