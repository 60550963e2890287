"""Property-based fuzzing of every operation of docs/openapi.json with Schemathesis, against the
real `reelgate serve` with the FakeUpstream as its text-model upstream and a funded organization
whose person has agreed to the video terms (API key for /v1, a console session and its CSRF
token for /console/api). Generated cases, schema examples, coverage cases and stateful sequences
through the document's links (create → get → content → delete). The run passes only with zero
5xx, no status the document does not declare for the operation, no undeclared content type or
header, no body that breaks its schema, no resource that vanishes after creation or survives
its deletion.

CI runs a bounded run (FUZZ_MAX_EXAMPLES per operation, default 8). The full run (≥ 5,000 cases):

    FUZZ_MAX_EXAMPLES=100 FUZZ_MIN_CASES=5000 REELGATE_BIN=<target>/debug/reelgate \
        ~/.cache/reelgate/tools/python/bin/python -m pytest -q -s tests/fuzz/test_schemathesis.py

The fake upstream and the engine are healthy here, so no 502/503/504 is legitimately due: those
statuses are declared for the routes that can answer them, and the check below also fails on
any of them.
"""

import json
import os
import re
import subprocess
import sys

from harness import FakeUpstream, serving

CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "use_after_free",
        "ensure_resource_availability",
    ]
)
DOCUMENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "openapi.json")


def test_fuzzing_every_operation_finds_no_server_error_and_no_contract_breach(tmp_path):
    examples = int(os.environ.get("FUZZ_MAX_EXAMPLES", "8"))
    fake = FakeUpstream(gap_ms=0)
    try:
        env = {"REELGATE_UPSTREAM_BASE_URL": fake.url, "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision"}
        with serving(env=env) as server:
            org = server.admin("org", "create", "--name", "Fuzz", "--plan", "starter", "--credits", "100000.00")
            user = server.admin("user", "create", "--org", org["id"], "--email", "fuzz@example.test")
            created = server.admin("key", "create", "--user", user["id"])
            key = created["secret"]
            # Thousands of cases a minute from one key: lift the key's per-minute limits (the
            # organization's starter limits still apply; their 429 is a declared answer).
            server.admin(
                "key", "limits", "set", "--key-id", created["id"],
                "--requests-per-minute", "100000000", "--tokens-per-minute", "100000000000",
                "--video-creates-per-minute", "100000000",
            )
            server.agree(user["id"], org["id"])
            console = server.console(user["id"], org["id"])
            cookie = console.set_cookie.split(";")[0]
            st = os.path.join(os.path.dirname(sys.executable), "st")
            args = [
                st, "run", DOCUMENT,
                "--url", server.base_url,
                "-H", f"Authorization: Bearer {key}",
                "-H", f"Cookie: {cookie}",
                "-H", f"X-CSRF-Token: {console.csrf}",
                "--checks", CHECKS,
                "--max-examples", str(examples),
                "--phases", "examples,coverage,fuzzing,stateful",
                "--workers", "2",
                "--seed", os.environ.get("FUZZ_SEED", "20261123"),
                "--request-timeout", "60",
                # A kept-alive connection the server closed between two requests is retried
                # (seen twice in 5,600 cases; not reproducible on a fresh connection). A status,
                # 5xx included, is never retried.
                "--request-retries", "2",
                "--suppress-health-check", "all",
                # Signing out ends the session every console operation of the run uses; it is
                # fuzzed by a run of its own below.
                "--exclude-operation-id", "ConsoleSignOut",
                "--report", "junit",
                "--report-dir", str(tmp_path),
            ]
            # Schemathesis keeps a cache directory in its working directory: not in the clone.
            run = subprocess.run(args, capture_output=True, text=True, timeout=3000, cwd=tmp_path)
            out = run.stdout + run.stderr
            print(out[-4000:])
            assert run.returncode == 0, out[-8000:]
            cases = int((re.findall(r"(\d+) generated", out) or ["0"])[-1])
            with open(DOCUMENT) as f:
                paths = json.load(f)["paths"]
            operations = sum(len(item) for item in paths.values())
            print(f"schemathesis: {cases} cases, {operations} operations (ConsoleSignOut in its own run)")
            assert cases >= int(os.environ.get("FUZZ_MIN_CASES", "500")), f"only {cases} cases ran"
            # The sign-out route alone, last (it ends the session).
            run2 = subprocess.run(
                [*args[:args.index("--exclude-operation-id")], "--include-operation-id", "ConsoleSignOut",
                 "--phases", "examples,coverage,fuzzing",
                 "--report", "junit", "--report-dir", str(tmp_path / "signout")],
                capture_output=True, text=True, timeout=600, cwd=tmp_path,
            )
            assert run2.returncode == 0, (run2.stdout + run2.stderr)[-4000:]
            log = open(server.log_path).read()
            assert "status=5" not in log, "the server logged a 5xx answer"
            assert "panicked" not in log, "a handler panicked (its connection closed unanswered)"
    finally:
        fake.stop()
