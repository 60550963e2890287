"""Upgrades lose nothing (issue #45, item 5): the current release is started on the data
directory an earlier release left behind when it was stopped with jobs in flight (the committed
fixture that tests/security_jobs/upgrade_fixture.py wrote with that release's binary). Everything
the tenant had reads back (jobs in every status, the file and its bytes, the stored responses and
their chain, the webhook endpoint, the usage), the jobs in flight finish, and no charge is made
twice: the balance moves by exactly the costs of the jobs that completed after the upgrade, and
no reservation is left. (On a fixture younger than the render step's 5-minute heartbeat, the
in-flight jobs render and complete, as when it was written; CI runs it on an older one, where
that heartbeat has lapsed while the service was down and they fail unbilled, as they would had
the service been down that long: both outcomes are checked for money and slots.)"""

import glob
import json
import os
import tarfile
import tempfile
import time
from decimal import Decimal

import httpx
import pytest

from conftest import start_server
from upgrade_fixture import FIXTURES, TERMINAL, server_env

from harness import FakeUpstream  # noqa: E402

MANIFESTS = sorted(glob.glob(os.path.join(FIXTURES, "upgrade-*.json")))


@pytest.fixture(params=MANIFESTS, ids=[os.path.basename(m)[8:-5] for m in MANIFESTS])
def upgraded(request):
    with open(request.param) as f:
        manifest = json.load(f)
    upstream = FakeUpstream()
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(request.param[: -len(".json")] + ".tar.gz") as tar:
            tar.extractall(tmp, filter="data")
        srv = start_server(os.path.join(tmp, "data"), **server_env(upstream.url))
        try:
            yield srv, manifest
        finally:
            srv.stop()
            upstream.stop()


def test_the_previous_releases_data_reads_back_and_its_jobs_finish(upgraded):
    srv, m = upgraded
    headers = {"Authorization": f"Bearer {m['key']}"}
    get = lambda path: httpx.get(f"{srv.base_url}{path}", headers=headers, timeout=30)  # noqa: E731
    v = m["videos"]

    done = get(f"/v1/videos/{v['completed']}").json()
    assert done["status"] == "completed" and Decimal(done["cost"]) > 0
    content = get(f"/v1/videos/{v['completed']}/content")
    assert content.status_code == 200 and content.content[4:8] == b"ftyp"
    assert get(f"/v1/videos/{v['failed']}").json()["status"] == "failed"
    assert get(f"/v1/videos/{v['canceled']}").json()["status"] == "canceled"

    # The jobs the old release left waiting on their renders finish under the new one: rendered
    # and charged once, or, when the fixture is older than the render step's heartbeat (it
    # fires on resume), failed unbilled.
    deadline = time.time() + 240
    while True:
        states = {i: get(f"/v1/videos/{i}").json() for i in v["in_flight"]}
        if all(s["status"] in TERMINAL for s in states.values()):
            break
        assert time.time() < deadline, {i: s["status"] for i, s in states.items()}
        time.sleep(1)
    outcomes = {s["status"]: s.get("error") for s in states.values()}
    assert set(outcomes) <= {"completed", "failed"}, states

    # Nothing charged twice, nothing held: the balance dropped by exactly the jobs completed
    # since the stop, and no reservation or render slot is left behind.
    state = srv.admin("org", "show", "--org", m["org"])
    after = Decimal(state["balance"])
    finished = sum(Decimal(s["cost"]) for s in states.values() if s["status"] == "completed")
    print(f"\nupgrade from {m['release']}: in-flight jobs {[s['status'] for s in states.values()]} "
          f"{[s['error'] and s['error']['code'] for s in states.values()]}; balance {m['balance_at_stop']} "
          f"at the stop, {after} after (completed since: {finished})")
    assert Decimal(m["balance_at_stop"]) - after == finished
    assert state["reserved"] == "0.00" and state["renders_in_flight"] == 0, state
    assert get(f"/v1/videos/{v['completed']}").json()["cost"] == done["cost"]

    f = get(f"/v1/files/{m['file']['id']}")
    assert f.status_code == 200 and f.json()["bytes"] == m["file"]["bytes"]
    assert len(get(f"/v1/files/{m['file']['id']}/content").content) == m["file"]["bytes"]
    first, second = m["responses"]
    assert get(f"/v1/responses/{second}").json()["previous_response_id"] == first
    chained = httpx.post(f"{srv.base_url}/v1/responses", headers=headers, timeout=30,
                         json={"model": "fake-model-v1", "input": "and now?", "previous_response_id": second})
    assert chained.status_code == 200, chained.text
    hooks = get("/v1/webhooks").json()["data"]
    assert [h["id"] for h in hooks] == [m["webhook"]]
    # The usage the old release wrote (its day) and the new one's, every page of it.
    kinds, page = set(), f"/v1/usage?start_time={done['created_at'] - 60}&group_by=kind&limit=31"
    while page:
        usage = get(page).json()
        kinds |= {r["kind"] for b in usage["data"] for r in b["results"]}
        page = usage["next_page"] and f"{page.split('&page=')[0]}&page={usage['next_page']}"
    assert {"input_tokens", "output_tokens", "video_seconds"} <= kinds, kinds


def test_data_a_newer_release_wrote_is_refused_in_words_not_misread(upgraded):
    """The other direction: a rollback to a release that does not know an item's format refuses
    that item (a 503 naming the format) instead of reading it wrong."""
    import sqlite3

    srv, m = upgraded
    with sqlite3.connect(os.path.join(srv.data_dir, "reelgate.sqlite3")) as conn:
        rows = conn.execute("SELECT pk, sk, data FROM items WHERE sk = ?", (f"VIDEO#{m['videos']['failed']}",)).fetchall()
        assert rows, "the failed job's record"
        pk, sk, data = rows[0]
        item = json.loads(data)
        item["fv"] = {"N": "999"}
        conn.execute("UPDATE items SET data = ? WHERE pk = ? AND sk = ?", (json.dumps(item), pk, sk))
    r = httpx.get(f"{srv.base_url}/v1/videos/{m['videos']['failed']}",
                  headers={"Authorization": f"Bearer {m['key']}"}, timeout=30)
    assert r.status_code >= 500 and "newer release" not in r.text, r.text  # the detail stays in the log
    with open(srv.log_path) as f:
        assert "written in format 999 by a newer release" in f.read()
