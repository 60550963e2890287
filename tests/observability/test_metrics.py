"""`GET /metrics`: off without REELGATE_METRICS_TOKEN, 401 without the token, and with it
Prometheus text (parsed by prometheus_client's parser) in which every series of
docs/observability.md is present and moves when the matching request is made."""

import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness import FakeUpstream, serving
from priced import catalog

TOKEN = "metrics-token-for-tests-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    fake = FakeUpstream(gap_ms=0, cached_tokens=3)
    try:
        env = {
            "REELGATE_CATALOG": catalog(tmp_path_factory.mktemp("catalog")),
            "FAKE_UPSTREAM_URL": fake.url,
            "REELGATE_METRICS_TOKEN": TOKEN,
        }
        with serving(env=env) as srv:
            yield srv
    finally:
        fake.stop()


def scrape(server):
    r = httpx.get(f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def test_the_route_is_off_without_a_token_and_refuses_other_tokens(server):
    with serving() as plain:
        assert httpx.get(f"{plain.base_url}/metrics").status_code == 404
        assert httpx.get(f"{plain.base_url}/metrics", headers=auth(TOKEN)).status_code == 404
    assert httpx.get(f"{server.base_url}/metrics").status_code == 401
    assert httpx.get(f"{server.base_url}/metrics", headers=auth(TOKEN[:-1] + "x")).status_code == 401
    # A customer's API key does not open it.
    assert httpx.get(f"{server.base_url}/metrics", headers=auth(server.api_key)).status_code == 401


def test_every_series_moves_with_its_requests(server):
    before = scrape(server)
    h = auth(server.api_key)
    assert httpx.get(f"{server.base_url}/v1/models", headers=h).status_code == 200
    assert httpx.get(f"{server.base_url}/v1/videos/video_nope", headers=auth("rgk_wrong")).status_code == 401
    chat = {"model": "cached-chat", "messages": [{"role": "user", "content": "hi"}]}
    r = httpx.post(f"{server.base_url}/v1/chat/completions", headers=h, json=chat, timeout=30)
    assert r.status_code == 200, r.text
    used = r.json()["usage"]
    dead = httpx.post(f"{server.base_url}/v1/chat/completions", headers=h, json={**chat, "model": "dead-chat"}, timeout=60)
    assert dead.status_code == 503, dead.text
    server.agree(server.user, server.org)
    video = {"model": "reel-1", "seconds": 4, "aspect_ratio": "16:9"}
    done = httpx.post(f"{server.base_url}/v1/videos", headers=h, json={**video, "prompt": "a lantern on a river"}).json()
    blocked = httpx.post(f"{server.base_url}/v1/videos", headers=h, json={**video, "prompt": "gore on the street"}).json()
    held = value(scrape(server), "reelgate_reservations_held")
    assert held >= 1, "a render in flight holds its reservation"
    deadline = time.time() + 240
    for job in (done, blocked):
        while httpx.get(f"{server.base_url}/v1/videos/{job['id']}", headers=h).json()["status"] not in ("completed", "failed"):
            assert time.time() < deadline
            time.sleep(1)
    after = scrape(server)

    def moved(name, by=None, **labels):
        delta = value(after, name, **labels) - value(before, name, **labels)
        if by is None:
            assert delta > 0, (name, labels, delta)
        else:
            assert delta == pytest.approx(by), (name, labels, delta)

    moved("reelgate_requests_total", by=1, route="/v1/models", status="200")
    moved("reelgate_requests_total", by=1, route="/v1/videos/{video_id}", status="401")
    moved("reelgate_request_duration_seconds_count", by=1, route="/v1/models", status="200")
    moved("reelgate_request_duration_seconds_bucket", by=1, route="/v1/models", status="200", le="+Inf")
    moved("reelgate_gateway_overhead_seconds_count", by=1, model="cached-chat")
    moved("reelgate_upstream_errors_total", model="dead-chat", kind="unreachable")
    moved("reelgate_tokens_total", by=used["prompt_tokens"] - 3, model="cached-chat", kind="input")
    moved("reelgate_tokens_total", by=3, model="cached-chat", kind="cached_input")
    moved("reelgate_tokens_total", by=used["completion_tokens"], model="cached-chat", kind="output")
    # (10 − 3) × 0.15 + 3 × 0.075 + 5 × 0.60, per million
    expected_spend = ((used["prompt_tokens"] - 3) * 0.15 + 3 * 0.075 + used["completion_tokens"] * 0.60) / 1e6
    moved("reelgate_spend_total", by=expected_spend, model="cached-chat", currency="usd")
    moved("reelgate_spend_total", by=float(done["cost"]), model="reel-1", currency="usd")
    moved("reelgate_video_jobs_total", by=1, status="completed", code="")
    moved("reelgate_video_jobs_total", by=1, status="failed", code="moderation_blocked")
    moved("reelgate_render_duration_seconds_count", by=1)
    moved("reelgate_queue_wait_seconds_count", by=1)
    assert value(after, "reelgate_reservations_held") == value(before, "reelgate_reservations_held"), (
        "both reservations were settled"
    )
