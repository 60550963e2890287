"""Writes the data set that tests/security_jobs/test_upgrade.py opens with the current release:
what an earlier release's `reelgate serve` left in its data directory when it was stopped with
work in flight. Run it with that release's binary, then commit the archive it writes:

    git worktree add /tmp/prev <commit> && (cd /tmp/prev && cargo build -p reelgate-cli --all-features)
    REELGATE_BIN=$CARGO_TARGET_DIR/debug/reelgate python tests/security_jobs/upgrade_fixture.py <commit>

It writes `fixtures/upgrade-<commit>.tar.gz` (the data directory, without its log) and
`fixtures/upgrade-<commit>.json` (what the test expects: the tenant's key, every id, the
statuses and balance at the stop). The data set holds, for one funded tenant that agreed to the
video terms: a completed, a failed (moderation), a canceled and two in-flight video jobs (admitted
and reserved, their renders not yet accepted by the engine, which was unreachable); an
uploaded file; two stored responses chained by previous_response_id; a chat completion; a
webhook endpoint; and the usage and ledger rows those charges wrote."""

import json
import os
import signal
import sys
import tarfile
import tempfile
import time

import httpx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
from conftest import make_tenant, png_bytes  # noqa: E402
from harness import FakeUpstream, LocalServer  # noqa: E402

FIXTURES = os.path.join(HERE, "fixtures")
TERMINAL = ("completed", "failed", "canceled")


def server_env(upstream_url):
    """What both releases are started with: the fake chat upstream and loopback webhooks."""
    return {"REELGATE_UPSTREAM_BASE_URL": upstream_url, "REELGATE_FETCH_ALLOW": "127.0.0.1"}


def video(t, prompt):
    r = httpx.post(t.url("/v1/videos"), headers=t.headers, timeout=30,
                   json={"model": "reel-1", "prompt": prompt, "seconds": 4, "aspect_ratio": "16:9"})
    assert r.status_code == 200, r.text
    return r.json()["id"]


def wait_for(t, video_id, statuses, limit=120):
    deadline = time.time() + limit
    while time.time() < deadline:
        v = httpx.get(t.url(f"/v1/videos/{video_id}"), headers=t.headers, timeout=30).json()
        if v["status"] in statuses:
            return v
        time.sleep(0.5)
    raise AssertionError(f"{video_id} never reached {statuses}")


def main(release):
    upstream = FakeUpstream()
    data_dir = tempfile.mkdtemp(prefix="reelgate-upgrade-")
    srv = LocalServer(data_dir, env=server_env(upstream.url)).start()
    try:
        t = make_tenant(srv, plan="enterprise", credits="100.00")
        chat = lambda body: httpx.post(t.url("/v1/chat/completions"), headers=t.headers, json=body, timeout=30)  # noqa: E731
        assert chat({"model": "fake-model-v1", "messages": [{"role": "user", "content": "hello"}]}).status_code == 200
        first = httpx.post(t.url("/v1/responses"), headers=t.headers, timeout=30,
                           json={"model": "fake-model-v1", "input": "remember the lantern", "store": True}).json()
        second = httpx.post(t.url("/v1/responses"), headers=t.headers, timeout=30,
                            json={"model": "fake-model-v1", "input": "and the river",
                                  "previous_response_id": first["id"], "store": True}).json()
        image = png_bytes(64, 36)
        file = httpx.post(t.url("/v1/files"), headers=t.headers, timeout=30, data={"purpose": "vision"},
                          files={"file": ("frame.png", image, "image/png")}).json()
        hook = httpx.post(t.url("/v1/webhooks"), headers=t.headers, timeout=30,
                          json={"url": "http://127.0.0.1:9/reelgate-hook"}).json()

        completed = video(t, "a paper lantern drifting over a river at dusk")
        wait_for(t, completed, ("completed",))
        failed = video(t, "gore scene")
        wait_for(t, failed, ("failed",))
        canceled = video(t, "a slow pan across a quiet harbour")
        r = httpx.post(t.url(f"/v1/videos/{canceled}/cancel"), headers=t.headers, timeout=30)
        assert r.status_code == 200, r.text
        wait_for(t, canceled, ("canceled",))
        srv.stop()
        # The deploy: the old release's engine is unreachable (as during an engine outage) and
        # it is killed with two jobs admitted, reserved and waiting on their renders, which
        # the new release must finish. (An in-process engine's renders die with the process,
        # so a render the old engine had started is lost whatever the release.)
        srv = LocalServer(data_dir, env={**server_env(upstream.url),
                                         "REELGATE_REFERENCE_ENGINE_URL": "http://127.0.0.1:9"}).start()
        t.server = srv
        in_flight = [video(t, f"a kite over a green hill, take {i}") for i in range(2)]
        time.sleep(0.5)
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait(timeout=10)
        srv.proc = None
        srv_state = LocalServer(data_dir, env=server_env(upstream.url))
        balance = srv_state.admin("org", "show", "--org", t.org)
        manifest = {
            "release": release,
            "org": t.org,
            "key": t.key,
            "credits": "100.00",
            "balance_at_stop": balance["balance"],
            "videos": {"completed": completed, "failed": failed, "canceled": canceled, "in_flight": in_flight},
            "responses": [first["id"], second["id"]],
            "file": {"id": file["id"], "bytes": len(image)},
            "webhook": hook["id"],
        }
        os.makedirs(FIXTURES, exist_ok=True)
        archive = os.path.join(FIXTURES, f"upgrade-{release}.tar.gz")
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(data_dir, arcname="data", filter=lambda m: None if m.name.endswith("serve.log") else m)
        with open(os.path.join(FIXTURES, f"upgrade-{release}.json"), "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        print(f"wrote {archive} ({os.path.getsize(archive)} bytes)")
    finally:
        if srv.proc:
            srv.stop()
        upstream.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "unknown")
