#!/usr/bin/env bash
# Offline checks of the AWS deployment definitions, no AWS account or credentials needed:
#   1. cfn-lint (PyPI) on infra/template.yaml — it checks SAM resources against SAM's schemas but
#      does not run the SAM transform;
#   2. the real SAM transform (aws-sam-translator, PyPI; scripts/sam-translate-check.py) on the
#      template, and cfn-lint again on what it expands to (the generated roles, permissions,
#      routes and event sources);
#   3. asl-validator (npm) on statemachine/*.asl.json — cfn-lint does not look inside a
#      DefinitionUri file. asl-validator accepts the ${Name} placeholders;
#   4. cfn-lint on infra/edge-payload-hash.yaml (the front door's Lambda@Edge function for stacks
#      outside us-east-1), and the front door's two edge functions (payload hash, Authorization
#      relay) run by node on sample events (scripts/edge-functions-check.js);
#   5. `sam validate --lint` (aws-sam-cli from scripts/deploy-tools.sh), the lint a deployer runs,
#      with the cfn-lint that SAM CLI bundles.
# The Rust side of the checks (functions <-> binaries, ASL placeholders <-> substitutions,
# API_ROUTES <-> API events) is functions/reelgate-lambda/tests/infra_consistency.rs.
#
# Tools are installed once, pinned, into ${REELGATE_TOOLS_DIR:-$HOME/.cache/reelgate/tools}.
# Exit status: 0 when all pass.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${REELGATE_TOOLS_DIR:-$HOME/.cache/reelgate/tools}"
# Pinned so a new rule set cannot fail a build that passed yesterday; bump deliberately.
CFN_LINT_VERSION="1.58.0"
SAM_TRANSLATOR_VERSION="1.115.0"
ASL_VALIDATOR_VERSION="4.0.0"
CFN_VENV="$TOOLS_DIR/cfn-lint-$CFN_LINT_VERSION-sam-$SAM_TRANSLATOR_VERSION"
ASL_DIR="$TOOLS_DIR/asl-validator-$ASL_VALIDATOR_VERSION"

die() {
  echo "infra-check: $*" >&2
  exit 1
}

install_cfn_lint() {
  # The marker is written last, so an interrupted install is redone rather than trusted.
  if [[ -f "$CFN_VENV/.installed" ]]; then return; fi
  command -v python3 >/dev/null || die "python3 is required to install cfn-lint"
  echo "infra-check: installing cfn-lint $CFN_LINT_VERSION and aws-sam-translator $SAM_TRANSLATOR_VERSION into $CFN_VENV" >&2
  rm -rf "$CFN_VENV"
  python3 -m venv "$CFN_VENV" || die "could not create a venv in $CFN_VENV"
  "$CFN_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "cfn-lint==$CFN_LINT_VERSION" "aws-sam-translator==$SAM_TRANSLATOR_VERSION" ||
    { rm -rf "$CFN_VENV"; die "pip could not install cfn-lint and aws-sam-translator"; }
  touch "$CFN_VENV/.installed"
}

install_asl_validator() {
  if [[ -f "$ASL_DIR/.installed" ]]; then return; fi
  command -v npm >/dev/null || die "npm (Node.js) is required to install asl-validator"
  echo "infra-check: installing asl-validator $ASL_VALIDATOR_VERSION into $ASL_DIR" >&2
  rm -rf "$ASL_DIR"
  mkdir -p "$ASL_DIR"
  npm install --silent --no-audit --no-fund --prefix "$ASL_DIR" "asl-validator@$ASL_VALIDATOR_VERSION" >/dev/null ||
    { rm -rf "$ASL_DIR"; die "npm could not install asl-validator@$ASL_VALIDATOR_VERSION"; }
  touch "$ASL_DIR/.installed"
}

mkdir -p "$TOOLS_DIR"
install_cfn_lint
install_asl_validator

status=0
echo "infra-check: cfn-lint $CFN_LINT_VERSION infra/template.yaml" >&2
# No region or credentials are needed: cfn-lint checks against its bundled resource specs.
if ! "$CFN_VENV/bin/cfn-lint" --regions us-east-1 --template "$ROOT/infra/template.yaml"; then
  echo "infra-check: cfn-lint found problems in infra/template.yaml" >&2
  status=1
fi

EXPANDED="$(mktemp --suffix=.json)"
trap 'rm -f "$EXPANDED"' EXIT
echo "infra-check: SAM transform (aws-sam-translator $SAM_TRANSLATOR_VERSION), then cfn-lint on its output" >&2
if "$CFN_VENV/bin/python" "$ROOT/scripts/sam-translate-check.py" "$ROOT/infra/template.yaml" "$EXPANDED"; then
  if ! "$CFN_VENV/bin/cfn-lint" --regions us-east-1 --template "$EXPANDED"; then
    echo "infra-check: cfn-lint found problems in the template the SAM transform expands to" >&2
    status=1
  fi
else
  echo "infra-check: the SAM transform rejected infra/template.yaml" >&2
  status=1
fi

for definition in "$ROOT"/statemachine/*.asl.json; do
  echo "infra-check: asl-validator $ASL_VALIDATOR_VERSION ${definition#"$ROOT"/}" >&2
  if ! "$ASL_DIR/node_modules/.bin/asl-validator" --json-path "$definition"; then
    echo "infra-check: asl-validator rejected ${definition#"$ROOT"/}" >&2
    status=1
  fi
done

echo "infra-check: cfn-lint $CFN_LINT_VERSION infra/edge-payload-hash.yaml" >&2
if ! "$CFN_VENV/bin/cfn-lint" --regions us-east-1 --template "$ROOT/infra/edge-payload-hash.yaml"; then
  echo "infra-check: cfn-lint found problems in infra/edge-payload-hash.yaml" >&2
  status=1
fi
EDGE_DIR="$(mktemp -d)"
trap 'rm -f "$EXPANDED"; rm -rf "$EDGE_DIR"' EXIT
echo "infra-check: the front door's edge functions on sample events (node)" >&2
# The function's inline code, as CloudFormation would zip it (index.js).
# The functions' inline code: the Lambda@Edge one as CloudFormation would zip it (index.js), the
# CloudFront function's as it is published.
if "$CFN_VENV/bin/python" - "$ROOT/infra/template.yaml" "$EDGE_DIR" <<'PY'
import sys, yaml
class Loader(yaml.SafeLoader):
    pass
Loader.add_multi_constructor("!", lambda loader, tag, node: None)
resources = yaml.load(open(sys.argv[1]), Loader=Loader)["Resources"]
open(sys.argv[2] + "/index.js", "w").write(resources["PayloadHashFunction"]["Properties"]["Code"]["ZipFile"])
open(sys.argv[2] + "/relay.js", "w").write(resources["RelayAuthorizationFunction"]["Properties"]["FunctionCode"])
PY
then
  if ! node "$ROOT/scripts/edge-functions-check.js" "$EDGE_DIR/index.js" "$EDGE_DIR/relay.js"; then
    echo "infra-check: the payload-hash function failed its checks" >&2
    status=1
  fi
else
  echo "infra-check: could not extract PayloadHashFunction's code" >&2
  status=1
fi

echo "infra-check: sam validate --lint (aws-sam-cli of scripts/deploy-tools.sh)" >&2
# Offline: --lint runs cfn-lint only (no credentials); the region names the resource specs.
if SAM_ENV="$(bash "$ROOT/scripts/deploy-tools.sh" --no-target env)"; then
  eval "$SAM_ENV"
  if ! (cd "$ROOT" && SAM_CLI_TELEMETRY=0 sam validate --lint --region us-east-1 \
    --template-file infra/template.yaml); then
    echo "infra-check: sam validate --lint found problems in infra/template.yaml" >&2
    status=1
  fi
else
  echo "infra-check: could not install aws-sam-cli (scripts/deploy-tools.sh)" >&2
  status=1
fi

if [[ $status -eq 0 ]]; then echo "infra-check: ok" >&2; fi
exit $status
