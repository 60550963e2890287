"""Webhooks against the real `reelgate serve`: endpoints are registered, listed, rotated and
deleted per organization; `video.completed`, `video.failed` and `video.canceled` reach a
receiver inside the tests, signed per Standard Webhooks (checked by the receiver's own HMAC
code); a first delivery that fails is retried with the same webhook-id, so the receiver sees
exactly one event per job; private addresses are refused; an endpoint that keeps failing ends
disabled with its reason; an event whose process died between the job's end and its queueing is
sent after a restart."""

import json
import os
import signal
import sqlite3
import tempfile
import time

import httpx
import pytest

from harness import LocalServer, serving
from receiver import verify

TERMINAL = ("completed", "failed", "canceled")


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def create_endpoint(server, url, events=None, key=None):
    body = {"url": url}
    if events is not None:
        body["events"] = events
    r = httpx.post(f"{server.base_url}/v1/webhooks", json=body, headers=auth(key or server.api_key))
    assert r.status_code == 200, r.text
    return r.json()


def create_video(server, prompt, seconds=4):
    body = {"model": "reel-1", "prompt": prompt, "seconds": seconds, "aspect_ratio": "16:9"}
    r = httpx.post(f"{server.base_url}/v1/videos", json=body, headers=auth(server.api_key), timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["id"]


def get_video(server, video_id):
    r = httpx.get(f"{server.base_url}/v1/videos/{video_id}", headers=auth(server.api_key))
    assert r.status_code == 200, r.text
    return r.json()


def wait_terminal(server, video_id, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = get_video(server, video_id)
        if v["status"] in TERMINAL:
            return v
        time.sleep(0.5)
    raise AssertionError(f"{video_id} did not finish")


def wait_for(predicate, timeout=60, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def get_endpoint(server, endpoint_id, key=None):
    return httpx.get(f"{server.base_url}/v1/webhooks/{endpoint_id}", headers=auth(key or server.api_key))


def test_completed_arrives_once_per_job_despite_a_failed_first_delivery(server, receiver):
    endpoint = create_endpoint(server, f"{receiver.url}/flaky/completed", ["video.completed"])
    secret = endpoint["secret"]
    assert secret.startswith("whsec_")
    assert endpoint["status"] == "enabled" and endpoint["events"] == ["video.completed"]
    # The secret is shown once: never on a read.
    listed = httpx.get(f"{server.base_url}/v1/webhooks", headers=auth(server.api_key)).json()
    assert listed["object"] == "list"
    assert endpoint["id"] in [e["id"] for e in listed["data"]]
    assert all("secret" not in e for e in listed["data"])
    assert "secret" not in get_endpoint(server, endpoint["id"]).json()

    jobs = [create_video(server, "a red kite over green hills"), create_video(server, "a lighthouse at dusk")]
    for job in jobs:
        assert wait_terminal(server, job)["status"] == "completed"

    path = "/flaky/completed"
    events = wait_for(lambda: len(receiver.events(path, secret)) == 2 and receiver.events(path, secret),
                      what="both completed events")
    attempts = receiver.received(path)
    # Every job's first delivery got a 500; the retry carried the same webhook-id and body.
    for job in jobs:
        tries = [(h, b, s) for h, b, s in attempts if job.encode() in b]
        assert [s for _, _, s in tries][:2] == [500, 204], [s for _, _, s in tries]
        assert len({h["webhook-id"] for h, _, _ in tries}) == 1
        assert len({b for _, b, _ in tries}) == 1
        assert all(verify(secret, h, b) for h, b, _ in tries)
        assert all(h["content-type"] == "application/json" for h, _, _ in tries)
    # Exactly one video.completed per job after deduplication, carrying the video as GET shows it.
    assert sorted(e["data"]["id"] for _, e in events) == sorted(jobs)
    for webhook_id, event in events:
        assert event["type"] == "video.completed"
        assert event["timestamp"].endswith("Z")
        assert event["data"] == get_video(server, event["data"]["id"])
        assert webhook_id.startswith("evt_")
    # The endpoint records its attempts and stays enabled.
    record = get_endpoint(server, endpoint["id"]).json()
    assert record["status"] == "enabled" and record["disabled_reason"] is None
    codes = [a["status_code"] for a in record["delivery"]["last_attempts"]]
    assert sorted(codes) == [204, 204, 500, 500], record
    assert record["delivery"]["consecutive_failures"] == 0
    assert record["delivery"]["last_success_at"] is not None


def test_failed_and_canceled_events_are_delivered_and_the_secret_rotates(server, receiver):
    endpoint = create_endpoint(server, f"{receiver.url}/ok/lifecycle", ["video.failed", "video.canceled"])
    old_secret = endpoint["secret"]
    # A Japanese prompt on a server without a translation model fails as translation_unavailable.
    failed = create_video(server, "夜明けの静かな港")
    assert wait_terminal(server, failed)["status"] == "failed"
    path = "/ok/lifecycle"
    events = wait_for(lambda: receiver.events(path, old_secret), what="the failed event")
    assert [e["type"] for _, e in events] == ["video.failed"]
    assert events[0][1]["data"]["id"] == failed
    assert events[0][1]["data"]["error"]["code"] == "translation_unavailable"

    # Rotation: the new secret is shown once; the old one still signs during its grace day.
    r = httpx.post(f"{server.base_url}/v1/webhooks/{endpoint['id']}/rotate_secret", headers=auth(server.api_key))
    assert r.status_code == 200, r.text
    new_secret = r.json()["secret"]
    assert new_secret.startswith("whsec_") and new_secret != old_secret
    assert "secret" not in get_endpoint(server, endpoint["id"]).json()

    canceled = create_video(server, "a paper boat in the rain", seconds=15)
    r = httpx.post(f"{server.base_url}/v1/videos/{canceled}/cancel", headers=auth(server.api_key))
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "canceled"
    received = wait_for(lambda: [x for x in receiver.received(path) if canceled.encode() in x[1]],
                        what="the canceled event")
    headers, body, _ = received[0]
    assert verify(new_secret, headers, body) and verify(old_secret, headers, body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    events = receiver.events(path, old_secret, new_secret)
    assert [e["type"] for _, e in events] == ["video.failed", "video.canceled"]
    assert events[-1][1]["data"]["status"] == "canceled"
    # Nothing was delivered for an event the endpoint did not subscribe to.
    assert all(e["type"] != "video.completed" for _, e in events)


def test_an_endpoint_that_keeps_failing_ends_disabled_with_its_reason(server, receiver):
    endpoint = create_endpoint(server, f"{receiver.url}/down/always", ["video.completed"])
    job = create_video(server, "waves on a reef")
    assert wait_terminal(server, job)["status"] == "completed"

    def disabled():
        e = get_endpoint(server, endpoint["id"]).json()
        return e if e["status"] == "disabled" else None

    record = wait_for(disabled, timeout=90, what="the endpoint to be disabled")
    # One attempt and three retries (REELGATE_WEBHOOK_RETRY_SECS=1,1,1), all answered 500.
    assert len(receiver.received("/down/always")) == 4
    assert "HTTP 500" in record["disabled_reason"]
    assert "4 delivery attempts" in record["disabled_reason"]
    attempts = record["delivery"]["last_attempts"]
    assert [a["attempt"] for a in attempts] == [4, 3, 2, 1]
    assert all(not a["succeeded"] and a["status_code"] == 500 for a in attempts)
    assert record["delivery"]["consecutive_failures"] == 4
    # A disabled endpoint gets nothing more.
    before = len(receiver.received("/down/always"))
    job = create_video(server, "a second kite")
    assert wait_terminal(server, job)["status"] == "completed"
    time.sleep(3)
    assert len(receiver.received("/down/always")) == before


def test_endpoints_are_scoped_to_their_organization_and_validated(server, receiver):
    endpoint = create_endpoint(server, f"{receiver.url}/ok/scoped")
    assert endpoint["events"] == ["video.completed", "video.failed", "video.canceled"]
    other_org = server.admin("org", "create", "--name", "Other", "--credits", "1.00")
    other_user = server.admin("user", "create", "--org", other_org["id"], "--email", "w@example.test")
    other_key = server.admin("key", "create", "--user", other_user["id"])["secret"]
    assert get_endpoint(server, endpoint["id"], other_key).status_code == 404
    r = httpx.delete(f"{server.base_url}/v1/webhooks/{endpoint['id']}", headers=auth(other_key))
    assert r.status_code == 404 and r.json()["error"]["code"] == "webhook_not_found"
    r = httpx.post(f"{server.base_url}/v1/webhooks/{endpoint['id']}/rotate_secret", headers=auth(other_key))
    assert r.status_code == 404
    listed = httpx.get(f"{server.base_url}/v1/webhooks", headers=auth(other_key)).json()
    assert listed["data"] == []
    assert httpx.get(f"{server.base_url}/v1/webhooks").status_code == 401

    for body, param in [
        ({"url": "ftp://example.com/hook"}, "url"),
        ({"url": f"{receiver.url}/x", "events": ["video.started"]}, "events"),
        ({"url": f"{receiver.url}/x", "events": []}, "events"),
        ({"url": f"{receiver.url}/x", "colour": "red"}, "colour"),
    ]:
        r = httpx.post(f"{server.base_url}/v1/webhooks", json=body, headers=auth(server.api_key))
        assert r.status_code == 400, (body, r.text)
        assert r.json()["error"]["param"] == param

    r = httpx.delete(f"{server.base_url}/v1/webhooks/{endpoint['id']}", headers=auth(server.api_key))
    assert r.status_code == 200 and r.json()["deleted"] is True
    assert get_endpoint(server, endpoint["id"]).status_code == 404


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://10.0.0.5/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9/hook",
        "http://[fd00:ec2::254]/hook",
    ],
)
def test_a_private_address_is_refused_at_create(private_server, url):
    r = httpx.post(f"{private_server.base_url}/v1/webhooks", json={"url": url}, headers=auth(private_server.api_key))
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == "url" and "refused" in error["message"]
    listed = httpx.get(f"{private_server.base_url}/v1/webhooks", headers=auth(private_server.api_key)).json()
    assert listed["data"] == []


@pytest.fixture(scope="module")
def private_server():
    """A server with the default guard: no private address allowed."""
    with serving() as srv:
        yield srv


def unsent_markers(data_dir):
    with sqlite3.connect(os.path.join(data_dir, "reelgate.sqlite3")) as db:
        return [sk for (sk,) in db.execute("SELECT sk FROM items WHERE pk = 'UNSENT_EVENTS'")]


def test_an_event_never_queued_before_a_crash_is_sent_after_the_restart(receiver):
    """The settlement that ends a job writes an unsent-event marker in its own transaction and
    the emission deletes it once queued. A process killed between the two leaves the job ended
    and the marker in place; here that state is made by killing the server (SIGKILL) and
    putting back the marker the crash would have left. The restarted server's recovery pass
    sends the event again, with the same webhook-id."""
    env = {"REELGATE_FETCH_ALLOW": "127.0.0.1", "REELGATE_WEBHOOK_RETRY_SECS": "1,1,1"}
    with tempfile.TemporaryDirectory() as data_dir:
        server = LocalServer(data_dir, env=env).start()
        try:
            server.agree(server.user, server.org)
            path = "/crash/completed"
            secret = create_endpoint(server, f"{receiver.url}{path}", ["video.completed"])["secret"]
            job = create_video(server, "a paper boat on a pond")
            assert wait_terminal(server, job)["status"] == "completed"
            first = wait_for(lambda: receiver.events(path, secret), what="the completed event")
            # Queued, so the marker is gone.
            wait_for(lambda: unsent_markers(data_dir) == [], what="the marker to be cleared")

            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait()
            with sqlite3.connect(os.path.join(data_dir, "reelgate.sqlite3")) as db:
                marker = {
                    "pk": {"S": "UNSENT_EVENTS"},
                    "sk": {"S": f"VIDEO#{job}"},
                    "kind": {"S": "unsent_event"},
                    "org": {"S": server.org},
                    "video_id": {"S": job},
                    "created_at": {"N": str(int(time.time()) - 3600)},
                }
                db.execute(
                    "INSERT INTO items (pk, sk, data) VALUES ('UNSENT_EVENTS', ?, ?)",
                    (f"VIDEO#{job}", json.dumps(marker)),
                )
            api_key, org = server.api_key, server.org
            server.start()
            server.api_key, server.org = api_key, org

            def resent():
                attempts = [h for h, _, s in receiver.received(path) if s == 204]
                return len(attempts) == 2 and attempts

            attempts = wait_for(resent, what="the event sent again after the restart")
            assert attempts[0]["webhook-id"] == attempts[1]["webhook-id"] == first[0][0]
            assert len(receiver.events(path, secret)) == 1  # one event once deduplicated
            wait_for(lambda: unsent_markers(data_dir) == [], what="the marker to be cleared")
        finally:
            server.stop()
