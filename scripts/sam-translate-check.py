"""Runs the real AWS SAM transform (aws-sam-translator) on a SAM template, offline.

cfn-lint validates SAM resources against schemas but does not run the transform, so errors only
the transform reports (e.g. an unsupported Globals property, an event that cannot be wired)
would first show at deploy time. Local CodeUri / DefinitionUri paths are replaced with S3 URIs
first, as `sam package` would, and pseudo parameters get placeholder values. Called by
scripts/infra-check.sh; prints the number of CloudFormation resources the template expands to and,
given a second argument, writes the expanded template there (for cfn-lint to check the generated
roles, permissions and event sources too).
"""

import os
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """The template names no AWS-managed policy by name, so nothing needs looking up in IAM."""

    def load(self):
        return {}


def packaged(template):
    """Replaces local artifact paths with S3 URIs, as `sam package` does after uploading them."""
    globals_fn = template.get("Globals", {}).get("Function", {})
    if isinstance(globals_fn.get("CodeUri"), str) and not globals_fn["CodeUri"].startswith("s3://"):
        globals_fn["CodeUri"] = "s3://reelgate-artifacts/function.zip"
    for name, resource in template.get("Resources", {}).items():
        props = resource.get("Properties") or {}
        for key in ("CodeUri", "DefinitionUri"):
            value = props.get(key)
            if isinstance(value, str) and not value.startswith("s3://"):
                props[key] = f"s3://reelgate-artifacts/{name}"
    return template


def main(path, output=None):
    # The transform fills AWS::Region and AWS::Partition; no request is made.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with open(path, encoding="utf-8") as f:
        template = yaml_parse(f.read())
    out = transform(packaged(template), {}, NoManagedPolicies())
    print(f"sam-translate: {len(out['Resources'])} CloudFormation resources after the SAM transform")
    if output:
        import json

        with open(output, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    except Exception as e:  # the translator's exceptions list every problem; show them, fail
        causes = getattr(e, "causes", None) or [e]
        for cause in causes:
            print(f"sam-translate: {cause}", file=sys.stderr)
        sys.exit(1)
