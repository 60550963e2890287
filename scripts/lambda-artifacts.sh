#!/usr/bin/env bash
# The Lambda deployment artifacts, measured (docs/cost.md, "Artifact sizes").
#
#   scripts/lambda-artifacts.sh [--no-build] [--out docs/bench/artifacts.json]
#
# Builds every reelgate-lambda bootstrap with the workspace's release profile (stripped; see
# Cargo.toml's [profile.release]), zips each one as Lambda ships it (`bootstrap` at the zip's
# root, deflate level 9), and prints per function: bootstrap bytes, zip bytes and whether it
# carries media code. Media code is detected in the binary itself, which survives stripping in
# two ways: Rust keeps the source path of every linked function that can panic (its panic
# location), and C++ keeps the type names of polymorphic classes (RTTI). So a bootstrap linking
# the H.264 codec carries openh264's `CWelsDecoder`/`WelsEnc` type names and the `openh264-x.y`
# source paths, one linking the AAC encoder or the MP4 muxer carries `fdk-aac-x.y`/`mp4-x.y`
# paths, and the image decoders `image-0.25.x` paths. Every function shares one library
# (`reelgate-lambda`), and the linker keeps only what a binary's entry point reaches, so the
# split is per binary. The targets (issue #16) are checked at the end: every HTTP function under
# 12 MiB bootstrap and 5 MiB zip and free of video codecs (H.264, AAC, MP4). Exit status 1 when
# a target is missed.
#
# Uses CARGO_TARGET_DIR when set (else the shared cache of scripts/cargo-env.sh). x86_64 only: see docs/cost.md for arm64.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=1
OUT="docs/bench/artifacts.json"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --out) OUT="$2"; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

# shellcheck source=scripts/cargo-env.sh
source scripts/cargo-env.sh
TARGET_DIR="$CARGO_TARGET_DIR"
if [[ "$BUILD" == 1 ]]; then
  cargo build --release --locked -p reelgate-lambda --bins
fi

python3 - "$TARGET_DIR/release" "$OUT" <<'PY'
import io, json, os, re, sys, time, zipfile
from pathlib import Path

release, out = Path(sys.argv[1]), Path(sys.argv[2])
bins = sorted(p.stem for p in Path("functions/reelgate-lambda/src/bin").glob("*.rs"))
# Source-path markers of the media crates (see the header).
VIDEO = {
    "openh264": rb"CWelsDecoder|WelsEnc|openh264-[0-9.]+/src",
    "fdk-aac": rb"fdk-aac-[0-9.]+/src",
    "mp4": rb"/mp4-0\.[0-9.]+/src",
}
OTHER_MEDIA = {
    "image decoders": rb"/image-0\.25\.[0-9]+/src",
    "reelgate-media": rb"reelgate-media/src/",
}
MEDIA = {**VIDEO, **OTHER_MEDIA}
rows = []
missing = [b for b in bins if not (release / b).exists()]
for b in bins:
    path = release / b
    if not path.exists():
        continue
    data = path.read_bytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        info = zipfile.ZipInfo("bootstrap", date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o755 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, data)
    media = sorted(name for name, pat in MEDIA.items() if re.search(pat, data))
    kind = "http" if b.startswith("api-") or b == "console" else "other"
    rows.append({"binary": b, "kind": kind, "bootstrap_bytes": len(data),
                 "zip_bytes": len(buf.getvalue()), "media_crates": media})

MB = 1024 * 1024
print(f"{'function':28} {'bootstrap':>12} {'zip':>12}  media code")
for r in rows:
    print(f"{r['binary']:28} {r['bootstrap_bytes']/MB:9.2f} MiB {r['zip_bytes']/MB:9.2f} MiB  "
          f"{', '.join(r['media_crates']) or 'none'}")
http = [r for r in rows if r["kind"] == "http"]
misses = []
for r in http:
    if r["bootstrap_bytes"] >= 12 * MB:
        misses.append(f"{r['binary']}: bootstrap {r['bootstrap_bytes']/MB:.2f} MiB >= 12 MiB")
    if r["zip_bytes"] >= 5 * MB:
        misses.append(f"{r['binary']}: zip {r['zip_bytes']/MB:.2f} MiB >= 5 MiB")
    video = [m for m in r["media_crates"] if m in VIDEO]
    if video:
        misses.append(f"{r['binary']}: HTTP function links video codecs ({', '.join(video)})")
profile = {}
in_release = False
for line in Path("Cargo.toml").read_text().splitlines():
    if line.strip().startswith("["):
        in_release = line.strip() == "[profile.release]"
    elif in_release and "=" in line:
        k, v = line.split("=", 1)
        profile[k.strip()] = v.strip().strip('"')
if missing:
    print(f"not built (not measured): {', '.join(missing)}")
    misses.append(f"not built: {', '.join(missing)}")
report = {"measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "arch": os.uname().machine,
          "release_profile": profile, "functions": rows, "target_misses": misses}
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(report, indent=1) + "\n")
print(f"release profile: {profile}")
print(f"wrote {out}")
if misses:
    print("targets missed (HTTP functions: bootstrap < 12 MiB, zip < 5 MiB, no video codecs):")
    for m in misses:
        print(f"  {m}")
    sys.exit(1)
print("targets met: every HTTP function under 12 MiB bootstrap and 5 MiB zip, without video codecs")
PY
