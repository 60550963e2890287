#!/usr/bin/env bash
# The deploy tools, from PyPI in seconds (no `cargo install`), into the tools cache beside the
# test tools (scripts/cargo-env.sh):
#   aws-sam-cli   `sam build`, `sam deploy`, `sam validate --lint`
#   cargo-lambda  what functions/reelgate-lambda/Makefile (sam build) builds the bootstraps with (`cargo lambda build`)
#   ziglang       zig: cargo-lambda's C compiler and linker for the cross build, against glibc
#                 2.17 symbols (provided.al2023 has 2.34; a plain build on a newer Linux asks for
#                 more)
# plus the rustup target of the template's Architectures (arm64: aarch64-unknown-linux-gnu).
#
#   bash scripts/deploy-tools.sh           install (idempotent), then say what is there
#   eval "$(bash scripts/deploy-tools.sh env)"   install if needed; print the PATH line only
#   --no-target                            leave rustup alone (scripts/infra-check.sh: the lint
#                                          needs sam only)
#
# Pinned so a new release cannot change what is built or what the lint accepts; bump together.
set -euo pipefail

NO_TARGET=0 MODE=""
for arg in "$@"; do
  case "$arg" in
    --no-target) NO_TARGET=1 ;;
    env) MODE=env ;;
    *) echo "deploy-tools: unknown argument $arg" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/cargo-env.sh
source "$ROOT/scripts/cargo-env.sh"
PACKAGES=("aws-sam-cli==1.170.0" "cargo-lambda==1.9.2" "ziglang==0.17.0")
VENV="$REELGATE_TOOLS_DIR/deploy"
STAMP="$VENV/.reelgate-packages"

say() { echo "deploy-tools: $*" >&2; }

# The venv's stamp holds the package list it was built from, written last, so a changed list or an
# interrupted install is redone rather than trusted.
if [[ ! -x "$VENV/bin/sam" ]] || [[ "$(cat "$STAMP" 2>/dev/null)" != "${PACKAGES[*]}" ]]; then
  command -v python3 >/dev/null || { say "python3 is required"; exit 1; }
  say "installing ${PACKAGES[*]} into $VENV"
  start=$SECONDS
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PACKAGES[@]}" >&2 ||
    { rm -rf "$VENV"; say "pip could not install ${PACKAGES[*]}"; exit 1; }
  printf '%s' "${PACKAGES[*]}" >"$STAMP"
  say "installed in $((SECONDS - start)) s"
fi

# The rustup target of the template's architecture (Globals.Function.Architectures).
arch="$(sed -n '/^Globals:/,/^Resources:/{/Architectures:/{n;s/^ *- *//p;q}}' "$ROOT/infra/template.yaml")"
case "$arch" in
  arm64) triple=aarch64-unknown-linux-gnu ;;
  x86_64) triple=x86_64-unknown-linux-gnu ;;
  *) say "infra/template.yaml: unknown Architectures '$arch'"; exit 1 ;;
esac
if [[ $NO_TARGET == 0 ]] && ! rustup target list --installed | grep -qx "$triple"; then
  say "rustup target add $triple (the template's $arch)"
  rustup target add "$triple" >&2
fi

if [[ "$MODE" == env ]]; then
  # The venv's python3 first: cargo-lambda finds zig as `python3 -m ziglang`.
  echo "export PATH=\"$VENV/bin:\$PATH\""
  exit 0
fi
export PATH="$VENV/bin:$PATH"
say "$(sam --version), $(cargo-lambda lambda --version 2>/dev/null || cargo lambda --version), zig $(python3 -m ziglang version), target $triple"
say "put them on PATH with: eval \"\$(bash scripts/deploy-tools.sh env)\""
