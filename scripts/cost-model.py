#!/usr/bin/env python3
"""The cost model: docs/cost.md from measurements and AWS list prices.

    python3 scripts/cost-model.py [--artifacts docs/bench/artifacts.json]
        [--cold-start docs/bench/cold-start.json] [--litellm docs/bench/vs-litellm.json]
        [--out docs/cost.md]

Reads what scripts/lambda-artifacts.sh and scripts/bench-cold-start.sh measured (bootstrap and
zip sizes; init, warm durations, peak RSS, log bytes and the DynamoDB/S3/SQS calls each
invocation made, counted at the emulator) and the AWS list prices below, and writes docs/cost.md.
Everything the model assumes rather than measures is in ASSUMPTIONS and printed in the document.
Money is computed with decimal.Decimal (exact), rounded only for display.
"""

import argparse
import statistics
import json
import math
import time
from decimal import Decimal as D, ROUND_HALF_UP
from pathlib import Path

import lambda_manifest  # scripts/lambda_manifest.py, beside this script

REPO = Path(__file__).resolve().parent.parent

# AWS list prices, region us-east-1 (N. Virginia), on-demand, no free tier, no savings plans.
# Taken from the public pricing pages (aws.amazon.com/<service>/pricing) as last known to the
# author; the date is when they were written down here. Check them before relying on a figure.
PRICES_DATE = "2026-11-23"
PRICES_REGION = "us-east-1"
PRICES = {
    "lambda_gb_second_x86": D("0.0000166667"),
    "lambda_gb_second_arm": D("0.0000133334"),
    "lambda_request": D("0.20") / D(1_000_000),
    "apigw_http_request": D("1.00") / D(1_000_000),  # HTTP API, first 300 M a month, per 512 KB
    "dynamodb_wru": D("0.625") / D(1_000_000),  # on-demand write request unit
    "dynamodb_rru": D("0.125") / D(1_000_000),  # on-demand read request unit
    "dynamodb_storage_gb_month": D("0.25"),
    "logs_ingest_gb": D("0.50"),  # CloudWatch Logs standard ingestion
    "logs_storage_gb_month": D("0.03"),
    "sfn_transition": D("0.025") / D(1_000),  # Step Functions Standard
    "sqs_request": D("0.40") / D(1_000_000),  # standard queue, per 64 KB chunk
    "s3_put": D("0.005") / D(1_000),  # PUT, COPY, POST, LIST
    "s3_get": D("0.0004") / D(1_000),  # GET and others
    "s3_storage_gb_month": D("0.023"),  # S3 Standard, first 50 TB
    "secret_month": D("0.40"),  # Secrets Manager, per secret
    "secrets_api_call": D("0.05") / D(10_000),
    "scheduler_invocation": D("1.00") / D(1_000_000),  # EventBridge Scheduler
    "fargate_vcpu_hour": D("0.04048"),  # ECS Fargate, Linux/x86
    "fargate_gb_hour": D("0.004445"),
    "alb_hour": D("0.0225"),
    "alb_lcu_hour": D("0.008"),
    "ec2_c7i_large_hour": D("0.08925"),
}

# What the model assumes rather than measures (each is printed in the document).
ASSUMPTIONS = {
    "model_wait_seconds": (D("2.0"), "seconds a buffered chat completion waits on the model "
                           "(Lambda bills that wall time; the measured gateway time is added on top)"),
    "response_bytes": (2_000, "bytes of a chat completion answer (one API Gateway request unit: < 512 KB)"),
    "lambda_platform_log_bytes": (350, "bytes of Lambda's own START/END/REPORT lines per invocation"),
    "render_seconds": (60, "seconds the engine takes to render one video (the engine's own cost is excluded)"),
    "render_poll_seconds": (2, "REELGATE_RENDER_POLL_SECS (default): one worker invocation per poll"),
    "video_bytes": (5_000_000, "bytes of one rendered MP4 (8 s at 720p is ~5 MB) plus its thumbnail"),
    "step_wait_seconds": (D("0.3"), "seconds a step function waits on Bedrock (moderation, "
                          "translation) beyond the measured gateway time"),
    "idle_schedule_per_month": (8_640, "reconciler schedule runs a month (every 5 minutes)"),
    "idle_sqs_polls_per_month": (2 * 5 * 3 * 60 * 24 * 30,
                                 "SQS ReceiveMessage calls a month by Lambda's pollers on the two "
                                 "queues while idle (5 pollers each, one 20 s long poll at a time)"),
    "secrets": (2, "Secrets Manager secrets (provider keys, front door origin secret)"),
    "container_vcpu": (D("1"), "always-on container: vCPUs (Fargate)"),
    "container_gb": (D("2"), "always-on container: memory in GB (Fargate)"),
    "container_tasks": (2, "always-on container: tasks (two for availability)"),
}

LAMBDA_MEMORY_STEPS = [128, 192, 256, 320, 384, 448, 512, 640, 768, 1024, 1536, 1769, 2048, 3008]


def a(name):
    return ASSUMPTIONS[name][0]


def service_of(key):
    return key.split(":")[0]


def op_of(key):
    return key.split(":")[1]


def money(x, places=4):
    q = D(1).scaleb(-places)
    return f"${D(x).quantize(q, rounding=ROUND_HALF_UP)}"


def function_ports(commit=None):
    """Each binary's declared ports, read from the manifest (functions/reelgate-lambda/src/functions.rs),
    as it is in the working tree or, given a commit, as it was there (a table measured at an older
    commit shows the ports its binaries had then)."""
    import re
    text = (commit and lambda_manifest.manifest_text(REPO, commit)) or lambda_manifest.manifest_text(REPO)
    body = text[text.index("manifest! {"):]
    out = {}
    for entry in body.split(";"):
        name = re.search(r'"([a-z0-9-]+)"', entry)
        if not name:
            continue
        if re.search(r"=\s*step\(", entry):
            out[name.group(1)] = "all"
            continue
        decl = re.search(r"Adapters::([A-Z_]+)((?:\.[a-z_]+\(\))*)", entry)
        if not decl:
            continue
        base, calls = decl.group(1), re.findall(r"\.([a-z_]+)\(\)", decl.group(2))
        if base == "ALL":
            out[name.group(1)] = "all"
        else:
            out[name.group(1)] = ", ".join(calls) or "store only"
    # A shared bootstrap (lambda_manifest.py): the ports its members declare.
    for binary, members in lambda_manifest.shared_bootstraps(text).items():
        out[binary] = " / ".join(sorted({out.get(m, "?") for m in members}))
    return out


def memory_for(rss_kb, media):
    """The memory size: at least twice the measured peak RSS (headroom for bigger requests and
    the allocator), from 128 MB; the finalize step gets 1,769 MB (one full vCPU: probing and
    decoding are CPU-bound, and Lambda gives CPU in proportion to memory)."""
    if media:
        return 1769
    need = max(128, 2 * (rss_kb or 0) / 1024)
    for m in LAMBDA_MEMORY_STEPS:
        if m >= need:
            return m
    return LAMBDA_MEMORY_STEPS[-1]


def ddb_units(aws):
    """(read request units, write request units) of one invocation, from the counted calls:
    items assumed <= 4 KB read and <= 1 KB written (reelgate's items are small); eventually
    consistent reads are half a unit; transactions cost two units per item."""
    rru = D(0)
    wru = D(0)
    for key, n in aws.items():
        service, op, kind = key.split(":")
        if service != "dynamodb" or kind != "units":
            continue
        n = D(str(n))
        if op in ("GetItem", "Query", "Scan", "BatchGetItem"):
            rru += n * D("0.5")
        elif op in ("GetItem(consistent)", "Query(consistent)"):
            rru += n
        elif op == "TransactGetItems":
            rru += 2 * n
        elif op == "TransactWriteItems":
            wru += 2 * n
        elif op in ("PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"):
            wru += n
    return rru, wru


def calls(aws, service, op=None):
    return sum(D(str(v)) for k, v in aws.items()
               if k.startswith(f"{service}:") and k.endswith(":calls") and (op is None or k.split(":")[1] == op))


def lambda_cost(memory_mb, seconds):
    gb_s = D(memory_mb) / D(1024) * D(str(seconds))
    return gb_s * PRICES["lambda_gb_second_x86"] + PRICES["lambda_request"]


def served(rows):
    """How many functions size rows stand for: a shared bootstrap's row for each of its functions."""
    return sum(len(f.get("functions", [f["binary"]])) for f in rows)


def shared_note(report):
    """Which functions each shared bootstrap of a size table runs, as the manifest of the table's
    commit says."""
    text = report.get("commit") and lambda_manifest.manifest_text(REPO, report["commit"])
    shared = lambda_manifest.shared_bootstraps(text or "")
    # Rows measured after the table's commit (a table patched with later runs) are read with the
    # working tree's manifest.
    shared = {**lambda_manifest.shared_bootstraps(lambda_manifest.manifest_text(REPO)), **shared}
    rows = {f["binary"] for f in report["functions"]}
    listed = [f"`{b}` runs {', '.join(members)}" for b, members in shared.items() if b in rows]
    if not listed:
        return "Every function has a bootstrap of its own."
    return ("Shared bootstraps (each deployed function runs it with `REELGATE_FUNCTION` naming "
            "which it is; `functions::SharedBootstrap`): " + "; ".join(listed) + ".")


# Measured by hand for the profile (the numbers come from the runs named in it).
def lambda_profile_note(artifacts, release, before):
    """What the `lambda` profile costs and saves, from the measurements beside it."""
    def size(report, name):
        rows = (report or {}).get("functions", []) + (report or {}).get("superseded_rows", [])
        f = {x["binary"]: x for x in rows}.get(name)
        return f"{f['bootstrap_bytes']/2**20:.2f} MiB ({f['zip_bytes']/2**20:.2f} MiB zipped)" if f else "not measured"
    build = artifacts.get("build_seconds")
    built = artifacts.get("bootstraps_built", len(artifacts["functions"]))
    build = (f"{build / 60:.0f} minutes for the {built} bootstraps built"
             if build else "not recorded")
    return (
        "The `lambda` profile (Cargo.toml) inherits `release` and sets `opt-level = \"s\"`, "
        "`lto = \"fat\"`, `codegen-units = 1`; `release` and `dev` are unchanged (CI, the README's "
        "commands and `reelgate serve` build them; CI never builds `lambda`), and `panic` stays "
        "`unwind` (a panicking request must not kill the process). `api-models` measures "
        f"{size(before, 'api-models')} before per-function assembly (`release`), "
        f"{size(release, 'api-models')} after it on `release` (at {release.get('commit', '?')}, "
        f"with the SDK's aws-lc) and {size(artifacts, 'api-models')} after it on `lambda` (at "
        f"{artifacts.get('commit', '?')}, one TLS crypto library: ring); `api-chat-completions` "
        f"{size(before, 'api-chat-completions')}, {size(release, 'api-chat-completions')} and "
        f"{size(artifacts, 'api-chat-completions')}. Its cost: the build took {build} on this 2-core "
        f"machine, {artifacts.get('build_note', 'from an empty cache for the profile (dependencies included)')} "
        "(each binary's fat LTO "
        "is one single-threaded link, against about a minute each for `release`), and warm "
        "invocations measured no slower: on the cold-start bench at the same load, before the TLS "
        "change (2026-11-24, "
        "load average 4.4), `api-chat-completions` warm p50/p99 203.2/267.2 ms (`lambda`) against "
        "208.1/355.4 ms (`release`), `api-models` 96.5/135.3 against 107.1/131.7 ms; the emulator's "
        "round trips dominate those durations, so a CPU difference of a few percent would not show. "
        "Peak RSS fell with the size (`api-chat-completions` 13.3 against 18.8 MiB)."
        + (f" Rows measured after that build: {artifacts['later_rows_note']}."
           if artifacts.get("later_rows_note") else ""))


def log_cost(nbytes):
    return D(nbytes) / D(1024 ** 3) * PRICES["logs_ingest_gb"]


def main():
    p = argparse.ArgumentParser()
    # The deployed artifacts: the size-optimised `lambda` profile (scripts/lambda-artifacts.sh
    # --profile lambda); the release-profile measurement and the one before per-function
    # assembly are shown beside it.
    p.add_argument("--artifacts", default=str(REPO / "docs/bench/artifacts-lambda.json"))
    p.add_argument("--artifacts-release", default=str(REPO / "docs/bench/artifacts.json"))
    p.add_argument("--artifacts-before", default=str(REPO / "docs/bench/artifacts-031d69b.json"))
    p.add_argument("--artifacts-arm64", default=str(REPO / "docs/bench/artifacts-lambda-arm64.json"))
    p.add_argument("--cold-start", default=str(REPO / "docs/bench/cold-start.json"))
    # What `sam build` puts in .aws-sam/build (scripts/sam-build-sizes.sh): the deployed artifacts.
    p.add_argument("--artifacts-sam-build",
                   default=str(REPO / "docs/bench/artifacts-sam-build-arm64.json"))
    p.add_argument("--litellm", default=str(REPO / "docs/bench/vs-litellm.json"))
    p.add_argument("--out", default=str(REPO / "docs/cost.md"))
    args = p.parse_args()
    artifacts = json.loads(Path(args.artifacts).read_text())
    optional = lambda path: json.loads(Path(path).read_text()) if Path(path).exists() else None
    release = optional(args.artifacts_release)
    before = optional(args.artifacts_before)
    arm64_path = Path(args.artifacts_arm64)
    if not arm64_path.exists():
        # No lambda-profile arm64 measurement yet: the release-profile one, labelled as such.
        arm64_path = REPO / "docs/bench/artifacts-arm64.json"
    arm64 = json.loads(arm64_path.read_text()) if arm64_path.exists() else None
    deployed = optional(args.artifacts_sam_build)
    cold = json.loads(Path(args.cold_start).read_text())
    fns = {f["binary"]: f for f in cold["functions"] if "error" not in f}
    sizes = {f["binary"]: f for f in artifacts["functions"] + artifacts.get("superseded_rows", [])}

    lines = []
    w = lines.append
    w("# What reelgate costs to run on AWS")
    w("")
    w("Generated by `python3 scripts/cost-model.py` from the measurements in `docs/bench/` "
      "(see [How to reproduce](#how-to-reproduce)); edit the script, not this file.")
    w("")
    w(f"Prices: AWS list prices for **{PRICES_REGION}**, on demand, without the free tier, as written "
      f"down on **{PRICES_DATE}** (the `PRICES` table in the script; check them against the AWS "
      "pricing pages before relying on a figure). Excluded everywhere: the model and the video "
      "engine themselves (tokens, Bedrock, the engine's GPU), data transfer out, and a CDN in front.")
    w("")
    load = cold['machine']['loadavg_1_5_15']
    busy = load[0] >= 1.0
    w(f"Measured on {cold['machine']['arch']}, {cold['machine']['cpus']} CPUs, at "
      f"{cold['measured_at']}, load average {load}" + (
          " (other work was running on the machine: durations are noisy and high rather than low)."
          if busy else " (nothing else was running)."))
    w("")

    # --------------------------------------------------------------------- artifacts
    if deployed:
        w(f"## Artifact sizes as deployed (`sam build`, {deployed['arch']})")
        w("")
        built = (f", the whole-stack `sam build` took {deployed['build_seconds']} s"
                 if deployed.get("build_seconds") else "")
        cold_build = deployed.get("cold_build")
        if cold_build:
            built += (f" over a warm cache; from a fresh clone and an empty cache, cargo built every "
                      f"bootstrap in {cold_build['cargo_seconds'] // 60} min {cold_build['cargo_seconds'] % 60} s "
                      f"(tools installed in {cold_build['tools_install_seconds']} s; "
                      "docs/deploy.md, \"Build\")")
        w(f"What `sam build` puts in `.aws-sam/build/<LogicalId>/bootstrap` (every function through "
          f"`functions/reelgate-lambda/Makefile`: profile `{deployed['profile']}`, "
          f"{deployed['arch']}, zig linking against glibc 2.17; docs/deploy.md, \"Build\"), measured "
          f"by `scripts/sam-build-sizes.sh` at {deployed['measured_at']} (sources of commit "
          f"{deployed.get('commit', 'not recorded')}{built}"
          + (f"; {deployed['note']}" if deployed.get("note") else "") + "); zip = "
          "the deployment package (deflate level 9). The streaming twins (`…StreamFunction`) "
          "deploy the same bootstrap as their HTTP function (the script checks that the copies "
          "are identical).")
        w("")
        w("| function | ports | bootstrap | zip | media code linked |")
        w("|---|---|---:|---:|---|")
        deployed_ports = function_ports(deployed.get("commit"))
        for f in deployed["functions"]:
            w(f"| {f['binary']} | {deployed_ports.get(f['binary'], '?')} | "
              f"{f['bootstrap_bytes']/2**20:.2f} MiB | {f['zip_bytes']/2**20:.2f} MiB | "
              f"{', '.join(f['media_crates']) or 'none'} |")
        w("")
        w(shared_note(deployed))
        w("")
        d_http = [f for f in deployed["functions"] if f["kind"] == "http"]
        d_met = [f for f in d_http if f["bootstrap_bytes"] < 12_000_000 and f["zip_bytes"] < 5_000_000]
        d_codecs = [m for m in deployed["target_misses"] if "links video codecs" in m]
        w(f"Size targets (every HTTP function's bootstrap under 12 MB, its zip under 5 MB), as "
          f"deployed: met by {len(d_met)} of {len(d_http)} HTTP bootstraps"
          + (f", serving {served(d_met)} of {served(d_http)} HTTP functions"
             if any("functions" in f for f in d_http) else "") + ".")
        w("")
        if d_codecs:
            w("HTTP bootstraps that link video codecs on purpose (they decode the caller's video "
              "before answering; `MAY_CARRY_CODECS` in `functions/reelgate-lambda/tests/media_code.rs`): "
              + "; ".join(m.replace(": HTTP function links video codecs", "") for m in d_codecs) + ".")
            w("")
        d_misses = [m for m in deployed["target_misses"]
                    if ": bootstrap " not in m and ": zip " not in m and m not in d_codecs]
        d_misses = [
            f"{f['binary']}: bootstrap {f['bootstrap_bytes']/1e6:.2f} MB"
            + (f" ({(f['bootstrap_bytes'] - 12_000_000)/1e6:+.2f} MB)" if f["bootstrap_bytes"] >= 12_000_000 else "")
            + f", zip {f['zip_bytes']/1e6:.2f} MB"
            + (f" ({(f['zip_bytes'] - 5_000_000)/1e6:+.2f} MB)" if f["zip_bytes"] >= 5_000_000 else "")
            for f in d_http if f not in d_met] + d_misses
        if d_misses:
            w("Missed (by how much beyond the target):")
            w("")
            for m in d_misses:
                w(f"- {m}")
            w("")
    w("What each function links, and what each change to that saved, measured change by change "
      "with the commands: [docs/lambda-artifacts.md](lambda-artifacts.md).")
    w("")
    w("## Artifact sizes (x86_64)")
    w("")
    w(f"Profile `{artifacts.get('profile', 'release')}`: `{artifacts['release_profile']}`. Measured at "
      f"{artifacts['measured_at']} by `scripts/lambda-artifacts.sh --profile "
      f"{artifacts.get('profile', 'release')}` (sources of commit "
      f"{artifacts.get('commit', 'not recorded')}); zip = the deployment package (deflate level 9). "
      "`ports` = what the function is assembled with beyond the item store "
      "(`reelgate_lambda::ports`: S3 blobs, SQS queues, Step Functions workflow, Bedrock chat, "
      "Bedrock video).")
    w("")
    ports = function_ports()
    w("| function | ports | bootstrap | zip | media code linked |")
    w("|---|---|---:|---:|---|")
    for f in artifacts["functions"]:
        w(f"| {f['binary']} | {ports.get(f['binary'], '?')} | {f['bootstrap_bytes']/2**20:.2f} MiB | "
          f"{f['zip_bytes']/2**20:.2f} MiB | {', '.join(f['media_crates']) or 'none'} |")
    w("")
    w(shared_note(artifacts))
    w("")
    # The targets are decimal megabytes (12 MB = 11.44 MiB, 5 MB = 4.77 MiB).
    http = [f for f in artifacts["functions"] if f["kind"] == "http"]
    met = [f for f in http if f["bootstrap_bytes"] < 12_000_000 and f["zip_bytes"] < 5_000_000]
    # Sizes are judged here (older JSON files judged MiB); other misses (codecs, not built) as
    # the measuring script wrote them.
    codecs = [m for m in artifacts["target_misses"] if "links video codecs" in m]
    misses = [m for m in artifacts["target_misses"]
              if ": bootstrap " not in m and ": zip " not in m and m not in codecs]
    misses = [
        f"{f['binary']}: bootstrap {f['bootstrap_bytes']/1e6:.2f} MB, zip {f['zip_bytes']/1e6:.2f} MB"
        for f in http if f not in met] + misses
    w(f"Size targets (every HTTP function's bootstrap under 12 MB, its zip under 5 MB): met by "
      f"{len(met)} of {len(http)} HTTP bootstraps, serving {served(met)} of {served(http)} HTTP "
      "functions" + (f" ({', '.join(f['binary'] for f in met)})." if met else "."))
    w("")
    if codecs:
        w("HTTP functions that link video codecs (issue #16's third target), each on purpose: it "
          "decodes the caller's video before it answers, so that a video without decodable "
          "pictures is a 400 rather than a failed job (`MAY_CARRY_CODECS` in "
          "`functions/reelgate-lambda/tests/media_code.rs`, which fails for any other): "
          + "; ".join(m.replace(": HTTP function links video codecs", "") for m in codecs) + ".")
        w("")
    if misses:
        w("Missed:")
        w("")
        for m in misses:
            w(f"- {m}")
        w("")
    if before or release:
        w("Where the reduction comes from (bootstrap / zip, MiB; x86_64):")
        w("")
        cols = []
        if before:
            cols.append((f"before: every port, `release` ({before.get('commit')})", before))
        if release:
            cols.append((f"own ports, `release` ({release.get('commit')})", release))
        cols.append((f"own ports, `{artifacts.get('profile', 'release')}` ({artifacts.get('commit')})",
                     artifacts))
        w("| function | " + " | ".join(c[0] for c in cols) + " |")
        w("|---|" + "---:|" * len(cols))
        # A row that a later shared bootstrap superseded still measures its commit's binary.
        by = [{f["binary"]: f for f in c[1]["functions"] + c[1].get("superseded_rows", [])}
              for c in cols]
        names = [n for n in sizes if any(n in b for b in by[:-1])]
        for n in names:
            cells = []
            for b in by:
                f = b.get(n)
                cells.append(f"{f['bootstrap_bytes']/2**20:.2f} / {f['zip_bytes']/2**20:.2f}" if f else "")
            w(f"| {n} | " + " | ".join(cells) + " |")
        w("")
    w("What each function links. A binary names its own manifest entry "
      "(`reelgate_lambda::functions`), or, shared by functions grouped by the ports they use, its "
      "members' entries (`functions::SharedBootstrap`, which becomes the member `REELGATE_FUNCTION` "
      "names); an entry holds its path's routes (`reelgate::api::PathRoutes`) "
      "and the ports it uses beyond the item store, as the constructors of their AWS adapters "
      "(`reelgate_lambda::ports::Adapters`, fn pointers in a `const`). `App` holds each port as a "
      "trait object, whose vtable links every method of the adapter wherever the adapter is built; "
      "a constructor no entry of the binary names is never referenced, so the adapter and its SDK "
      "client stay out. A port a function does not declare is `ports::Absent`: every call fails "
      "with an error naming the port and the function, logged at error level. "
      "`functions/reelgate-lambda/tests/function_ports.rs` runs the whole local service, then drives "
      "every method of every HTTP function's path with a representative valid request over existing "
      "objects (a file, an upload, a completed video, a running render, a stored response, a webhook "
      "endpoint) through an App in which only that function's declared ports work, and fails on any "
      "call to an absent port, even one whose error the handler swallows (it caught the cancel "
      "route's webhook send and engine cancel), and drives every console route with a signed-in "
      "session the same way: the console is four functions, each declaring only its routes' ports "
      "(docs/console.md, \"On AWS\"). The steps, the workers and the reconciler declare every port.")
    w("")
    groups = {}
    # Measured function by function: a shared bootstrap's row is its members' union, so the rows
    # it superseded say what each port costs.
    per_function = ([f for f in artifacts["functions"] if "functions" not in f]
                    + artifacts.get("superseded_rows", []))
    for f in per_function:
        if f["kind"] == "http":
            groups.setdefault(ports.get(f["binary"], "?"), []).append(f)
    if groups:
        w("What each port costs, by the HTTP functions that declare the same ports (median "
          "bootstrap / zip): " + "; ".join(
              f"{name}: {statistics.median(x['bootstrap_bytes'] for x in fs)/2**20:.2f} / "
              f"{statistics.median(x['zip_bytes'] for x in fs)/2**20:.2f} MiB ({len(fs)})"
              for name, fs in sorted(groups.items(), key=lambda g: statistics.median(
                  x['bootstrap_bytes'] for x in g[1]))) + ". The difference between the store-only and the blobs groups is S3 (the SDK client "
          "and its checksums).")
        w("")
    w("What is left in every function: the item store (DynamoDB) with the AWS SDK's runtime "
      "(aws-config with its credential providers and STS, smithy, SigV4), the Secrets Manager read "
      "at start-up, one HTTP client and one TLS stack (the SDK's requests go through reqwest, "
      "the client of the upstreams, engines, webhooks and the OTLP exporter, with rustls over "
      "ring: `reelgate_aws::sdk_loader` gives the SDK that client, so neither aws-lc, the SDK's "
      "default crypto at 1.4 MiB, nor the smithy hyper client with its HTTP/2 is in any binary; "
      "`functions/reelgate-lambda/tests/media_code.rs` checks both), the axum/tower stack, "
      "tracing with the OpenTelemetry layer, the catalog and settings, the upstream-model "
      "discovery and the OpenID Connect client. api-responses also carries hayro, the PDF "
      "renderer that turns an `input_file` PDF into page images for models without PDF input. "
      "Video codecs are linked only where a function decodes a video (`MAY_CARRY_CODECS` in "
      "`functions/reelgate-lambda/tests/media_code.rs`: the finalize, stitch and moderate steps, "
      "and the characters', edits' and extensions' create, which decode the caller's video before "
      "they answer); no function carries an AAC or H.264 encoder. A lever not taken: an S3 client "
      "of our own over SigV4 and reqwest in place of `aws-sdk-s3`.")
    w("")
    w(lambda_profile_note(artifacts, release, before))
    w("")
    if arm64:
        w("### arm64 (the template's architecture)")
        w("")
        w(f"Cross-built for Graviton by `scripts/lambda-artifacts.sh --arch arm64` (zig from PyPI as "
          f"the C compiler and linker, glibc 2.17 symbols, as cargo-lambda does), measured at "
          f"{arm64['measured_at']}, profile `{arm64.get('profile', 'release')}` (not the `lambda` "
          f"profile of the x86_64 table unless it says so), sources of commit "
          f"{arm64.get('commit', 'not recorded')}" + (f" ({arm64['note']})" if arm64.get("note") else "")
          + ":")
        w("")
        w("| function | bootstrap | zip | media code linked |")
        w("|---|---:|---:|---|")
        for f in arm64["functions"]:
            w(f"| {f['binary']} | {f['bootstrap_bytes']/2**20:.2f} MiB | {f['zip_bytes']/2**20:.2f} MiB | "
              f"{', '.join(f['media_crates']) or 'none'} |")
        w("")
    else:
        w("arm64 (Graviton, the template's architecture): `scripts/lambda-artifacts.sh --arch arm64` "
          "measures it; no measurement is committed (docs/bench/artifacts-arm64.json).")
        w("")

    # --------------------------------------------------------------------- cold starts
    w("## Cold and warm starts (x86_64, `scripts/bench-cold-start.sh`)")
    w("")
    w(f"Init = process start to the first `next` poll of the runtime API; first = the first "
      f"invocation; warm = {cold['warm_invocations']} sequential invocations after it; medians of "
      f"{cold['cold_runs']} cold starts. DynamoDB/S3/SQS run in the local emulator, so every AWS "
      "call is a local round trip to a Python process: the durations are the function's own work "
      "plus the emulator's, not AWS's network.")
    w("")
    w(f"The bootstraps are the `{cold.get('profile', 'release')}` profile built for the host "
      "(x86_64): the emulator runs each bootstrap as a host process, so the arm64 artifacts that "
      "`sam build` deploys (above) were not started here; same sources and profile, another "
      "instruction set. Their cold starts on Graviton are not measured.")
    w("")
    w("| function | event | init ms | first ms | warm p50 ms | warm p99 ms | peak RSS MiB | memory MB | AWS calls / invocation |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---|")
    memory = {}
    for f in cold["functions"]:
        if "error" in f:
            w(f"| {f['binary']} | {f.get('event','')} | failed | | | | | | {f['error'][:120]!r} |")
            continue
        media = f["binary"] == "step-finalize"
        memory[f["binary"]] = memory_for(f.get("peak_rss_kb"), media)
        aws = f.get("aws_per_invocation", {})
        summary = ", ".join(f"{service_of(k)} {op_of(k)} {v:g}" for k, v in aws.items() if k.endswith(":calls"))
        wm = f["warm"]
        earlier = f" ({f['note']})" if f.get("note") else ""
        w(f"| {f['binary']} | {f['event']} → {', '.join(f'{k}×{v}' for k, v in wm['statuses'].items())}{earlier} | "
          f"{f['init_ms_median']:.1f} | {f['first_ms_median']:.1f} | {wm['p50_ms']:.2f} | {wm['p99_ms']:.2f} | "
          f"{(f.get('peak_rss_kb') or 0)/1024:.1f} | {memory[f['binary']]} | {summary or 'none'} |")
    w("")
    w("Memory size rule (the `memory MB` column): the smallest Lambda size of at least twice the "
      "measured peak RSS and at least 128 MB; the finalize step gets 1,769 MB (one full vCPU) because "
      "its real work (probing the MP4, decoding a frame for the thumbnail) is CPU-bound, which this "
      "event does not exercise. The render worker only talks to the engine (the engine renders), so "
      "it is sized like the others.")
    w("")

    # --------------------------------------------------------------------- chat
    chat = fns.get("api-chat-completions")
    w("## Per 1 million chat completions (the gateway's own cost)")
    w("")
    if chat:
        mem = memory["api-chat-completions"]
        gateway_s = D(str(chat["warm"]["p50_ms"])) / 1000
        wait = a("model_wait_seconds")
        aws = chat.get("aws_per_invocation", {})
        rru, wru = ddb_units(aws)
        log_bytes = chat.get("log_bytes_per_invocation", 0) + a("lambda_platform_log_bytes")
        n = D(1_000_000)
        items = [
            ("Lambda requests", PRICES["lambda_request"] * n, "1 M × $0.20 per M"),
            ("Lambda duration, gateway work", D(mem) / 1024 * gateway_s * PRICES["lambda_gb_second_x86"] * n,
             f"{mem} MB × {gateway_s * 1000:.2f} ms (measured warm p50)"),
            ("Lambda duration, waiting on the model", D(mem) / 1024 * wait * PRICES["lambda_gb_second_x86"] * n,
             f"{mem} MB × {wait} s (assumed model time)"),
            ("API Gateway HTTP API", PRICES["apigw_http_request"] * n, "1 request unit each"),
            ("DynamoDB reads", rru * PRICES["dynamodb_rru"] * n, f"{rru} RRU per request (measured calls)"),
            ("DynamoDB writes", wru * PRICES["dynamodb_wru"] * n, f"{wru} WRU per request (measured calls)"),
            ("CloudWatch Logs", log_cost(log_bytes) * n, f"{log_bytes} bytes per request (measured + Lambda's lines)"),
        ]
        total = sum(x[1] for x in items)
        without_wait = total - items[2][1]
        counted = ", ".join(f"{op_of(k)} {v:g}" for k, v in aws.items()
                            if k.startswith("dynamodb") and k.endswith(":calls"))
        w(f"Memory {mem} MB; DynamoDB calls counted per request: {counted}.")
        w("")
        w("| item | per 1 M | basis |")
        w("|---|---:|---|")
        for name, cost, basis in items:
            w(f"| {name} | {money(cost, 2)} | {basis} |")
        w(f"| **total** | **{money(total, 2)}** | with {wait} s of model time per request |")
        w(f"| total without the model wait | {money(without_wait, 2)} | a function URL instead of API Gateway saves {money(items[3][1], 2)} |")
        w("")
        w("Streaming through the function URL (RESPONSE_STREAM) bills the same GB-s for the stream's "
          "duration and no API Gateway request. Lambda bills the wall time spent waiting on the model, "
          "so the model's latency, not the gateway's work, dominates the Lambda line.")
        w("")
        chat_total = total
    else:
        w("The chat function was not measured.")
        chat_total = None

    # --------------------------------------------------------------------- video
    w("## Per 1,000 video jobs (the gateway's own cost)")
    w("")
    polls = math.ceil(a("render_seconds") / a("render_poll_seconds"))
    rows = []
    jobs = D(1000)

    def fn_cost(binary, invocations, extra_wait=D(0)):
        f = fns.get(binary)
        note = ""
        if not f and "execution-ended" in fns:
            # Not built in this run: the reconciler's measured invocation (one read, one
            # decision) stands in for the function's own work, flagged as an estimate.
            f, note = fns["execution-ended"], " (estimate: execution-ended's measured duration)"
        if not f:
            return None, "not measured"
        mem = memory.get(binary) or memory_for(f.get("peak_rss_kb"), binary == "step-finalize")
        secs = D(str(f["warm"]["p50_ms"])) / 1000 + extra_wait
        return lambda_cost(mem, secs) * invocations * jobs, f"{invocations} × {mem} MB × {secs * 1000:.1f} ms{note}"

    admission = fns.get("api-videos")
    for label, binary, inv, extra in [
        ("API: create, 4 status polls, content download", "api-video-item", 6, D(0)),
        ("Step: moderate", "step-moderate", 1, a("step_wait_seconds")),
        ("Step: translate", "step-translate", 1, a("step_wait_seconds")),
        ("Render worker: submit + polls", "render-worker", 1 + polls, D(0)),
        ("Step: finalize (probe, thumbnail)", "step-finalize", 1, D("1.0")),
    ]:
        cost, basis = fn_cost(binary, inv, extra)
        if cost is None:
            rows.append((f"Lambda: {label}", None, f"`{binary}` not measured in this run: left out of the total"))
        else:
            rows.append((f"Lambda: {label}", cost, basis + (f" (+{extra}s assumed)" if extra else "")))
    rows.append(("API Gateway requests", PRICES["apigw_http_request"] * 6 * jobs, "6 per job"))
    rows.append(("Step Functions transitions", PRICES["sfn_transition"] * 4 * jobs,
                 "4 per job (Moderate, Translate, Render, Finalize: statemachine/video.asl.json)"))
    sqs_per_job = 3 * (1 + polls)
    rows.append(("SQS requests", PRICES["sqs_request"] * sqs_per_job * jobs,
                 f"{sqs_per_job} per job: send, receive and delete for the submit and each of {polls} polls"))
    # DynamoDB: the HTTP calls measured for the item read; the job's writes counted from the code
    # (domain/videos/jobs.rs, workflow/steps.rs, workflow/worker.rs): admission transaction (job,
    # reservation, idempotency, 3 items), a status write per step (3), the finalize transaction
    # (job, charge, ledger: 3 items), one read per step and per poll.
    item = fns.get("api-video-item", {}).get("aws_per_invocation", {})
    rru_item, wru_item = ddb_units(item)
    reads = rru_item * 6 + D("0.5") * (4 + polls)
    writes = D(2 * 3) + D(3) + D(2 * 3) + wru_item * 6
    rows.append(("DynamoDB reads", reads * PRICES["dynamodb_rru"] * jobs,
                 f"{reads} RRU per job (a read per step and poll, from the code"
                 + ("; the API's reads measured)" if item else "; the API's reads not measured)")))
    rows.append(("DynamoDB writes", writes * PRICES["dynamodb_wru"] * jobs,
                 f"{writes} WRU per job (counted from the code: two transactions of 3 items, 3 status writes)"))
    rows.append(("S3 requests", (PRICES["s3_put"] * 2 + PRICES["s3_get"] * 3) * jobs,
                 "2 PUT (video, thumbnail), 3 GET (finalize probe, thumbnail, one download)"))
    gb = D(a("video_bytes")) / D(10 ** 9)
    rows.append(("S3 storage, 30 days", gb * PRICES["s3_storage_gb_month"] * jobs, f"{a('video_bytes')/1e6:.1f} MB per job for a month"))
    logs = D(400 + a("lambda_platform_log_bytes")) * (10 + polls)
    rows.append(("CloudWatch Logs", log_cost(logs) * jobs, f"~{logs} bytes per job"))
    video_total = sum(r[1] for r in rows if r[1] is not None)
    partial = any(r[1] is None for r in rows)
    w(f"A job renders for {a('render_seconds')} s (assumed), so the worker runs {1 + polls} times (submit + a poll every "
      f"{a('render_poll_seconds')} s).")
    w("")
    w("| item | per 1,000 jobs | basis |")
    w("|---|---:|---|")
    for name, cost, basis in rows:
        w(f"| {name} | {'not measured' if cost is None else money(cost, 4)} | {basis} |")
    w(f"| **total** | **{money(video_total, 4)}** | {'without the functions not measured' if partial else ''} |")
    w("")

    # --------------------------------------------------------------------- idle
    w("## Idle cost per month")
    w("")
    ex = fns.get("execution-ended")
    sched_cost = PRICES["scheduler_invocation"] * a("idle_schedule_per_month")
    if ex:
        sched_cost += lambda_cost(memory["execution-ended"], D(str(ex["warm"]["p50_ms"])) / 1000) * a("idle_schedule_per_month")
    idle = [
        ("Lambda, API Gateway, Step Functions", D(0), "nothing runs, nothing is billed"),
        ("DynamoDB (on demand)", D(0), "no requests; storage of a small table is cents"),
        ("Reconciler schedule", sched_cost, f"{a('idle_schedule_per_month')} runs (EventBridge Scheduler + Lambda)"),
        ("SQS pollers", PRICES["sqs_request"] * a("idle_sqs_polls_per_month"),
         f"{a('idle_sqs_polls_per_month')} empty long polls (inside SQS's 1 M free requests in practice)"),
        ("Secrets Manager", PRICES["secret_month"] * a("secrets"), f"{a('secrets')} secrets"),
    ]
    idle_total = sum(r[1] for r in idle)
    w("| item | per month | basis |")
    w("|---|---:|---|")
    for name, cost, basis in idle:
        w(f"| {name} | {money(cost, 2)} | {basis} |")
    w(f"| **total** | **{money(idle_total, 2)}** | |")
    w("")

    # --------------------------------------------------------------------- container
    w("## The same on an always-on container")
    w("")
    hours = D(730)
    vcpu, gbm, tasks = a("container_vcpu"), a("container_gb"), a("container_tasks")
    task_month = (vcpu * PRICES["fargate_vcpu_hour"] + gbm * PRICES["fargate_gb_hour"]) * hours
    alb_month = (PRICES["alb_hour"] + PRICES["alb_lcu_hour"]) * hours
    container_month = task_month * tasks + alb_month
    w(f"`reelgate serve` (or LiteLLM) on ECS Fargate: {tasks} tasks of {vcpu} vCPU / {gbm} GB (x86) behind an "
      f"Application Load Balancer (one LCU): {money(task_month, 2)} per task-month, "
      f"{money(alb_month, 2)} for the load balancer, **{money(container_month, 2)} a month** whether or not "
      "it serves a request (plus the same DynamoDB/S3 or a database). One 1-vCPU task serves far more "
      "than 1,000 chat requests a second of gateway work (see docs/performance.md), so capacity is not "
      "the limit at these volumes; the bill is fixed.")
    w("")
    if chat_total is not None:
        w("| chat completions a month | Lambda + API Gateway | always-on container |")
        w("|---:|---:|---:|")
        for volume in (100_000, 1_000_000, 10_000_000, 100_000_000):
            lam = chat_total * volume / D(1_000_000) + idle_total
            w(f"| {volume:,} | {money(lam, 2)} | {money(container_month, 2)} |")
        per_m = chat_total
        breakeven = (container_month - idle_total) / per_m * D(1_000_000)
        w("")
        w(f"With {a('model_wait_seconds')} s of model time per request, Lambda costs more than the container "
          f"from about **{breakeven:,.0f} completions a month** (~{breakeven / D(30 * 86400):.1f} a second "
          "on average); below that, pay-per-use wins, and at zero traffic it costs the idle line above.")
        w("")

    # --------------------------------------------------------------------- assumptions
    w("## Assumptions")
    w("")
    for name, (value, why) in ASSUMPTIONS.items():
        w(f"- `{name}` = {value}: {why}")
    w("")
    w("## How to reproduce")
    w("")
    w("```sh")
    w("scripts/lambda-artifacts.sh            # builds the bootstraps, writes docs/bench/artifacts.json")
    w("scripts/lambda-artifacts.sh --arch arm64  # the same for Graviton, docs/bench/artifacts-arm64.json")
    w("scripts/sam-build-sizes.sh             # the whole-stack sam build, docs/bench/artifacts-sam-build-arm64.json")
    w("scripts/bench-cold-start.sh            # cold/warm starts on the emulator, docs/bench/cold-start.json")
    w("python3 scripts/cost-model.py          # this document")
    w("scripts/bench-vs-litellm.sh            # the side-by-side with LiteLLM, docs/performance.md")
    w("```")
    w("")
    w("The scripts build in the same cargo cache as the README's commands (`scripts/cargo-env.sh`).")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
