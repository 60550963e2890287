"""`Idempotency-Key` on the creating requests, against the real server: a retry with the same key
and body answers the first result and admits nothing twice (also when the retries race), the same
key with a different body is refused, keys belong to one organization and expire."""

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx

from conftest import IDEMPOTENCY_TTL_SECS, make_tenant, png_bytes

# A prompt the built-in rules block: the job ends in moderation, quickly and unbilled.
BLOCKED = "gore in a dark alley"


def video_body(prompt=BLOCKED, seconds=4):
    return {"model": "reel-1", "prompt": prompt, "seconds": seconds, "aspect_ratio": "16:9"}


def create_video(t, body, key=None):
    headers = dict(t.headers)
    if key is not None:
        headers["Idempotency-Key"] = key
    return httpx.post(t.url("/v1/videos"), headers=headers, json=body, timeout=90)


def video_ids(t):
    r = httpx.get(t.url("/v1/videos"), headers=t.headers, params={"limit": 100})
    assert r.status_code == 200, r.text
    return [v["id"] for v in r.json()["data"]]


def file_ids(t):
    r = httpx.get(t.url("/v1/files"), headers=t.headers)
    assert r.status_code == 200, r.text
    return [f["id"] for f in r.json()["data"]]


def test_a_retried_video_create_answers_the_first_job_and_admits_once(tenant):
    key = f"retry-{uuid.uuid4()}"
    first = create_video(tenant, video_body(), key)
    assert first.status_code == 200, first.text
    again = create_video(tenant, video_body(), key)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    # Key order in the JSON body does not make it another request.
    reordered = dict(reversed(list(video_body().items())))
    assert create_video(tenant, reordered, key).json()["id"] == first.json()["id"]
    assert video_ids(tenant) == [first.json()["id"]]
    # Without a key, each request is its own.
    a = create_video(tenant, video_body()).json()["id"]
    b = create_video(tenant, video_body()).json()["id"]
    assert len({a, b, first.json()["id"]}) == 3


def test_the_same_key_with_another_body_is_refused(tenant):
    key = f"reuse-{uuid.uuid4()}"
    assert create_video(tenant, video_body(seconds=4), key).status_code == 200
    other = create_video(tenant, video_body(seconds=5), key)
    assert other.status_code == 400, other.text
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert len(video_ids(tenant)) == 1


def test_racing_retries_admit_one_job(tenant):
    key = f"race-{uuid.uuid4()}"
    before = tenant.state()
    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda _: create_video(tenant, video_body(), key), range(12)))
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    ids = {a.json()["id"] for a in answers}
    assert len(ids) == 1, ids
    assert video_ids(tenant) == list(ids)
    # Once the blocked job has ended, nothing stays reserved and nothing was charged.
    deadline = time.time() + 60
    while True:
        v = httpx.get(tenant.url(f"/v1/videos/{ids.pop()}"), headers=tenant.headers).json()
        if v["status"] in ("completed", "failed", "canceled"):
            break
        assert time.time() < deadline, v
        ids.add(v["id"])
        time.sleep(0.5)
    after = tenant.state()
    assert after["reserved"] == "0.00" and after["renders_in_flight"] == 0, after
    assert after["balance"] == before["balance"], (before, after)


def test_keys_belong_to_one_organization(server, tenant):
    other = make_tenant(server)
    key = f"shared-{uuid.uuid4()}"
    mine = create_video(tenant, video_body(), key)
    theirs = create_video(other, video_body(seconds=6), key)
    assert mine.status_code == 200 and theirs.status_code == 200, (mine.text, theirs.text)
    assert mine.json()["id"] != theirs.json()["id"]
    assert video_ids(other) == [theirs.json()["id"]]


def test_a_key_expires(tenant):
    key = f"expiry-{uuid.uuid4()}"
    first = create_video(tenant, video_body(), key).json()["id"]
    time.sleep(IDEMPOTENCY_TTL_SECS + 1.5)
    later = create_video(tenant, video_body(seconds=7), key)
    assert later.status_code == 200, later.text
    assert later.json()["id"] != first


def test_a_malformed_key_is_refused(tenant):
    r = create_video(tenant, video_body(), "x" * 300)
    assert r.status_code == 400, r.text
    assert video_ids(tenant) == []


def upload_file(t, content, key=None, name="a.png"):
    headers = dict(t.headers)
    if key is not None:
        headers["Idempotency-Key"] = key
    # httpx picks a new multipart boundary per request: the same form, different bytes on the wire.
    return httpx.post(
        t.url("/v1/files"),
        headers=headers,
        files={"file": (name, content, "image/png")},
        data={"purpose": "vision"},
        timeout=60,
    )


def test_a_retried_file_upload_registers_one_file(tenant):
    key = f"file-{uuid.uuid4()}"
    png = png_bytes()
    first = upload_file(tenant, png, key)
    assert first.status_code == 200, first.text
    again = upload_file(tenant, png, key)
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert file_ids(tenant) == [first.json()["id"]]
    different = upload_file(tenant, png_bytes(shade=7), key)
    assert different.status_code == 400, different.text
    assert different.json()["error"]["code"] == "idempotency_key_reused"
    with ThreadPoolExecutor(max_workers=8) as pool:
        raced = list(pool.map(lambda _: upload_file(tenant, png, f"{key}-race"), range(8)))
    assert all(r.status_code == 200 for r in raced), [r.text for r in raced]
    assert len({r.json()["id"] for r in raced}) == 1
    assert len(file_ids(tenant)) == 2


def test_a_retried_upload_create_answers_the_first_upload(tenant):
    key = f"upload-{uuid.uuid4()}"
    body = {"purpose": "vision", "filename": "big.png", "bytes": 1234, "mime_type": "image/png"}
    first = httpx.post(tenant.url("/v1/uploads"), headers={**tenant.headers, "Idempotency-Key": key}, json=body)
    assert first.status_code == 200, first.text
    again = httpx.post(tenant.url("/v1/uploads"), headers={**tenant.headers, "Idempotency-Key": key}, json=body)
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]
    other = httpx.post(
        tenant.url("/v1/uploads"),
        headers={**tenant.headers, "Idempotency-Key": key},
        json={**body, "bytes": 99},
    )
    assert other.status_code == 400, other.text
    assert other.json()["error"]["code"] == "idempotency_key_reused"
