"""Crashes never leak money or slots: the server is killed with SIGKILL in the middle of a burst
of 50 concurrent creates and restarted on the same data directory. Every admitted job must end
terminal, the organization's `reserved` and renders in flight return to zero, and the balance
moves by exactly the completed jobs' costs (nothing charged twice, nothing charged for a job
that did not complete)."""

import os
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import httpx

from conftest import make_tenant, start_server

TERMINAL = ("completed", "failed", "canceled")
BURST = 50
# Most prompts are blocked by the built-in rules (their jobs end in moderation); a few render.
RENDERED = 3


def body(i):
    prompt = f"a paper lantern number {i} over a river" if i < RENDERED else f"gore scene {i}"
    return {"model": "reel-1", "prompt": prompt, "seconds": 4, "aspect_ratio": "16:9"}


def list_jobs(base_url, key):
    r = httpx.get(f"{base_url}/v1/videos", headers={"Authorization": f"Bearer {key}"}, params={"limit": 100}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["data"]


def test_sigkill_mid_burst_leaks_no_money_and_no_slot():
    with tempfile.TemporaryDirectory() as data_dir:
        first = start_server(data_dir)
        try:
            t = make_tenant(first, plan="enterprise", credits="100.00")
            before = Decimal(t.state()["balance"])
            answered = []
            lock = threading.Lock()

            def create(i):
                try:
                    r = httpx.post(
                        t.url("/v1/videos"), headers=t.headers, json=body(i), timeout=30
                    )
                    with lock:
                        answered.append(r.status_code)
                except httpx.HTTPError:
                    pass  # the server died under this request

            pool = ThreadPoolExecutor(max_workers=BURST)
            futures = [pool.submit(create, i) for i in range(BURST)]
            # Mid-burst: some creates answered, most still in flight.
            deadline = time.time() + 30
            while len(answered) < 8 and time.time() < deadline:
                time.sleep(0.002)
            os.kill(first.proc.pid, signal.SIGKILL)
            first.proc.wait(timeout=10)
            first.proc = None
            for f in futures:
                f.result(timeout=60)
            pool.shutdown()
        finally:
            first.stop()
        assert len(answered) < BURST, "the kill came after the burst; nothing was tested"

        second = start_server(data_dir)
        try:
            deadline = time.time() + 240
            while True:
                jobs = list_jobs(second.base_url, t.key)
                running = [j for j in jobs if j["status"] not in TERMINAL]
                if not running:
                    break
                assert time.time() < deadline, f"jobs never ended: {[(j['id'], j['status']) for j in running]}"
                time.sleep(1)
            assert jobs, "no job was admitted before the kill"
            outcome = {}
            for j in jobs:
                k = j["status"] if j["status"] != "failed" else j["error"]["code"]
                outcome[k] = outcome.get(k, 0) + 1
            print(f"answered before the kill: {len(answered)}; jobs admitted: {len(jobs)}; outcomes: {outcome}")
            state = second.admin("org", "show", "--org", t.org)
            assert state["reserved"] == "0.00", state
            assert state["renders_in_flight"] == 0, state
            charged = sum((Decimal(j["cost"]) for j in jobs if j["status"] == "completed"), Decimal(0))
            assert Decimal(state["balance"]) == before - charged, (state, charged, jobs)
            for j in jobs:
                if j["status"] == "failed":
                    assert j["error"]["code"] in (
                        "moderation_blocked",
                        "moderation_unavailable",
                        "engine_unavailable",
                    ), j
        finally:
            second.stop()
