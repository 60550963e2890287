"""A crash in the middle of a stitch: the server is killed with SIGKILL while the Stitch state
joins an extension's segment after its source (the conformed segment is written, the joined clip
is not), then restarted on the same data directory. The extension must end terminal (resumed to
completed, or failed), billed at most its quote once and only if completed, with no reservation
or render slot left behind."""

import os
import signal
import tempfile
import time
from decimal import Decimal

import httpx

from conftest import make_tenant, start_server

TERMINAL = ("completed", "failed", "canceled")


def wait_terminal(tenant, video_id, limit=240):
    deadline = time.time() + limit
    while True:
        v = httpx.get(tenant.url(f"/v1/videos/{video_id}"), headers=tenant.headers, timeout=30).json()
        if v["status"] in TERMINAL:
            return v
        assert time.time() < deadline, f"{video_id} still {v['status']}"
        time.sleep(0.2)


def test_sigkill_during_a_stitch_resumes_or_fails_unbilled_and_leaks_nothing():
    with tempfile.TemporaryDirectory() as data_dir:
        first = start_server(data_dir)
        try:
            t = make_tenant(first, credits="20.00")
            source = httpx.post(
                t.url("/v1/videos"), headers=t.headers, timeout=30,
                json={"model": "reel-1", "prompt": "a lighthouse at dusk", "seconds": 8, "aspect_ratio": "16:9"},
            ).json()
            assert wait_terminal(t, source["id"])["status"] == "completed"
            before = Decimal(t.state()["balance"])
            extension = httpx.post(
                t.url("/v1/videos/extensions"), headers=t.headers, timeout=30,
                json={"prompt": "the beam sweeps the sea", "seconds": 8, "video": {"id": source["id"]}},
            )
            assert extension.status_code == 200, extension.text
            extension = extension.json()
            job_dir = os.path.join(data_dir, "blobs", "data", t.org, "videos", extension["id"])
            segment, stitched = (os.path.join(job_dir, n) for n in ("segment.mp4", "stitched.mp4"))
            # The stitch has started once the conformed segment is written, and not finished
            # while the joined clip is not.
            deadline = time.time() + 180
            while not os.path.exists(segment):
                assert time.time() < deadline, "the stitch never started"
                time.sleep(0.01)
            assert not os.path.exists(stitched), "the stitch ended before the kill; nothing was tested"
            os.kill(first.proc.pid, signal.SIGKILL)
            first.proc.wait(timeout=10)
            first.proc = None
        finally:
            first.stop()

        second = start_server(data_dir)
        try:
            t.server = second
            done = wait_terminal(t, extension["id"])
            state = t.state()
            print(f"after the kill mid-stitch: {done['status']} {done.get('error')}; {state}")
            assert state["reserved"] == "0.00", state
            assert state["renders_in_flight"] == 0, state
            charged = Decimal(done["cost"]) if done["status"] == "completed" else Decimal(0)
            assert Decimal(state["balance"]) == before - charged, (state, done)
            if done["status"] == "completed":
                assert done["seconds"] == 16
            else:
                assert done["error"]["code"] == "engine_unavailable", done
        finally:
            second.stop()
