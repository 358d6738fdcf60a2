#!/usr/bin/env bash
# Installs pcctl from a pcc control plane: downloads the release and its published SHA-256, verifies it,
# installs it atomically, and keeps the previously installed version when anything goes wrong.
#
#   curl -fsSL https://CONTROL-PLANE/downloads/install.sh | bash
#
# Settings (environment): PCC_URL (the control plane), PCCTL_PREFIX (default /usr/local), PCCTL_INSECURE=1 to
# accept a self-signed certificate, PCCTL_CACERT=FILE to trust a CA file.
set -euo pipefail

PCC_URL="${PCC_URL:-@PCC_URL@}"
PREFIX="${PCCTL_PREFIX:-/usr/local}"
BIN_DIR="$PREFIX/bin"
LIB_DIR="$PREFIX/lib/pcctl"
CURL=(curl -fsSL --retry 2 --connect-timeout 10)
[ "${PCCTL_INSECURE:-}" = 1 ] && CURL+=(-k)
[ -n "${PCCTL_CACERT:-}" ] && CURL+=(--cacert "$PCCTL_CACERT")

step() { printf '==> %s\n' "$*"; }
fail() { printf 'error: %s\n' "$*" >&2; exit 1; }

case "$PCC_URL" in http://*|https://*) ;; *) fail "set PCC_URL to the control plane's URL, e.g. PCC_URL=https://cloud.example.com" ;; esac
command -v node >/dev/null 2>&1 || fail "pcctl needs Node.js 20 or later: install it first (e.g. apt-get install nodejs)"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || fail "pcctl needs Node.js 20 or later; found $(node --version)"
command -v sha256sum >/dev/null 2>&1 || fail "sha256sum is missing (package coreutils)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

step "Downloading pcctl from $PCC_URL"
"${CURL[@]}" -o "$work/pcctl.mjs" "$PCC_URL/downloads/pcctl" || fail "download failed; check PCC_URL and the network (pcctl check-url helps)"
"${CURL[@]}" -o "$work/pcctl.sha256" "$PCC_URL/downloads/pcctl.sha256" || fail "the published checksum could not be downloaded"

step "Verifying the SHA-256 checksum"
expected="$(awk '{print $1}' "$work/pcctl.sha256")"
actual="$(sha256sum "$work/pcctl.mjs" | awk '{print $1}')"
if [ -z "$expected" ] || [ "$expected" != "$actual" ]; then
  fail "checksum mismatch (published ${expected:-none}, downloaded $actual): nothing was installed; the previous pcctl, if any, is unchanged"
fi
node "$work/pcctl.mjs" --version >/dev/null || fail "the downloaded pcctl does not run: nothing was installed"

step "Installing into $PREFIX"
mkdir -p "$BIN_DIR" "$LIB_DIR"
target="$LIB_DIR/pcctl-$actual.mjs"
cp "$work/pcctl.mjs" "$target.tmp" && chmod 755 "$target.tmp" && mv -f "$target.tmp" "$target"
previous="$(readlink "$BIN_DIR/pcctl" 2>/dev/null || true)"
# A new link renamed over the old one: the switch is atomic, so pcctl is never missing or half-written.
ln -sfn "$target" "$BIN_DIR/.pcctl.new"
mv -Tf "$BIN_DIR/.pcctl.new" "$BIN_DIR/pcctl"
if ! "$BIN_DIR/pcctl" --version >/dev/null 2>&1; then
  if [ -n "$previous" ]; then ln -sfn "$previous" "$BIN_DIR/.pcctl.new" && mv -Tf "$BIN_DIR/.pcctl.new" "$BIN_DIR/pcctl"; fi
  fail "the installed pcctl does not run; restored the previous version"
fi
step "Installed $("$BIN_DIR/pcctl" --version) at $BIN_DIR/pcctl"
