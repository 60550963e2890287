"""`GET /v1/usage` and `reelgate admin usage`: after a mix of renders, chat completions (plain and
streamed) and responses (plain and streamed) across two keys of one organization, the report's
amounts equal what this test computes itself from the quotes and from the token counts the fake
upstream reported — exactly, as decimals — split by model, key and kind."""

import json
import time
from decimal import Decimal

import httpx
import pytest

from harness import FakeUpstream, serving
from priced import catalog

CACHED = 4  # prompt tokens the fake upstream reports as cached, of its 10

# (input, cached input or None, output) per million tokens.
PRICES = {
    "cached-chat": (Decimal("0.15"), Decimal("0.075"), Decimal("0.60")),
    "plain-chat": (Decimal("1.10"), None, Decimal("4.40")),
}


def auth(key):
    return {"Authorization": f"Bearer {key}"}


def sse(response):
    """The JSON payloads of a server-sent event stream."""
    out = []
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[len("data: "):]))
    return out


class Ledger:
    """What the test expects, computed from what the service and the fake upstream reported."""

    def __init__(self):
        self.rows = []  # (model, key name, kind, quantity, amount)

    def text(self, model, key, prompt, cached, completion):
        price_in, price_cached, price_out = PRICES[model]
        price_cached = price_in if price_cached is None else price_cached
        m = Decimal(1_000_000)
        self.rows += [
            (model, key, "input_tokens", prompt - cached, Decimal(prompt - cached) * price_in / m),
            (model, key, "cached_input_tokens", cached, Decimal(cached) * price_cached / m),
            (model, key, "output_tokens", completion, Decimal(completion) * price_out / m),
        ]

    def video(self, model, key, seconds, quote):
        self.rows.append((model, key, "video_seconds", seconds, Decimal(quote)))

    def total(self, **match):
        return sum(
            (r[4] for r in self.rows if all(r[i] == v for i, v in self._where(match))), Decimal(0)
        )

    def quantity(self, **match):
        return sum(r[3] for r in self.rows if all(r[i] == v for i, v in self._where(match)))

    @staticmethod
    def _where(match):
        index = {"model": 0, "key": 1, "kind": 2}
        return [(index[k], v) for k, v in match.items()]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    fake = FakeUpstream(gap_ms=0, cached_tokens=CACHED)
    try:
        env = {"REELGATE_CATALOG": catalog(tmp_path_factory.mktemp("catalog")), "FAKE_UPSTREAM_URL": fake.url}
        with serving(env=env) as server:
            yield server
    finally:
        fake.stop()


def chat(server, key, model, stream=False):
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
        with httpx.stream("POST", f"{server.base_url}/v1/chat/completions", headers=auth(key), json=body, timeout=30) as r:
            assert r.status_code == 200, r.read()
            events = sse(r)
        usage = events[-1]["usage"]
    else:
        r = httpx.post(f"{server.base_url}/v1/chat/completions", headers=auth(key), json=body, timeout=30)
        assert r.status_code == 200, r.text
        usage = r.json()["usage"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return usage["prompt_tokens"], cached, usage["completion_tokens"]


def respond(server, key, model, stream=False):
    body = {"model": model, "input": "hi", "store": False}
    if stream:
        body["stream"] = True
        with httpx.stream("POST", f"{server.base_url}/v1/responses", headers=auth(key), json=body, timeout=30) as r:
            assert r.status_code == 200, r.read()
            events = sse(r)
        done = [e for e in events if e.get("type") == "response.completed"]
        assert done, events
        usage = done[0]["response"]["usage"]
    else:
        r = httpx.post(f"{server.base_url}/v1/responses", headers=auth(key), json=body, timeout=30)
        assert r.status_code == 200, r.text
        usage = r.json()["usage"]
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens", 0)
    return usage["input_tokens"], cached, usage["output_tokens"]


def render(server, key, seconds):
    r = httpx.post(
        f"{server.base_url}/v1/videos",
        headers=auth(key),
        json={"model": "reel-1", "prompt": "a paper lantern drifting over a river", "seconds": seconds, "aspect_ratio": "16:9"},
    )
    assert r.status_code == 200, r.text
    return r.json()


def wait_completed(server, key, job):
    deadline = time.time() + 240
    while True:
        v = httpx.get(f"{server.base_url}/v1/videos/{job['id']}", headers=auth(key)).json()
        if v["status"] in ("completed", "failed", "canceled"):
            assert v["status"] == "completed", v
            return v
        assert time.time() < deadline, v
        time.sleep(1)


def usage(server, key, **params):
    r = httpx.get(f"{server.base_url}/v1/usage", headers=auth(key), params=params, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def rows(report):
    return [r for b in report["data"] for r in b["results"]]


def test_usage_totals_equal_the_quotes_and_the_upstreams_token_counts(world):
    server = world
    start = int(time.time()) - 60
    key_a = server.api_key
    second = server.admin("user", "create", "--org", server.org, "--email", "second@example.test")
    b = server.admin("key", "create", "--user", second["id"])
    key_b, key_b_id = b["secret"], b["id"]
    assert rows(usage(server, key_a, start_time=start, group_by="api_key")) == [], "no usage yet"
    balance_before = Decimal(server.admin("org", "show", "--org", server.org)["balance"])
    server.agree(server.user, server.org)
    server.agree(second["id"], server.org)

    # Another organization's spend must not appear in this one's report.
    other = server.admin("org", "create", "--name", "Other", "--credits", "5.00")
    other_user = server.admin("user", "create", "--org", other["id"], "--email", "o@example.test")
    other_key = server.admin("key", "create", "--user", other_user["id"])["secret"]
    chat(server, other_key, "cached-chat")

    expected = Ledger()
    job_a = render(server, key_a, 4)
    job_b = render(server, key_b, 8)
    expected.text("cached-chat", "a", *chat(server, key_a, "cached-chat"))
    expected.text("cached-chat", "a", *chat(server, key_a, "cached-chat", stream=True))
    expected.text("plain-chat", "a", *chat(server, key_a, "plain-chat"))
    expected.text("plain-chat", "b", *chat(server, key_b, "plain-chat", stream=True))
    expected.text("cached-chat", "b", *respond(server, key_b, "cached-chat"))
    expected.text("plain-chat", "b", *respond(server, key_b, "plain-chat", stream=True))
    # The console's own traffic counts under the key `console`.
    with server.console() as console:
        r = console.post("/console/api/chat/completions", json={"model": "cached-chat", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
        u = r.json()["usage"]
        expected.text("cached-chat", "console", u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"], u["completion_tokens"])
    for key, name, job in ((key_a, "a", job_a), (key_b, "b", job_b)):
        done = wait_completed(server, key, job)
        expected.video("reel-1", name, int(done["seconds"]), done["cost"])
    # The fake upstream's cached count reached the bill (else this test would not test it).
    assert expected.quantity(kind="cached_input_tokens") == 7 * CACHED
    # Streams are charged after the last byte; give the charges a moment.
    time.sleep(1)

    # Any member's key sees the whole organization's spend; the totals are exact.
    for key in (key_a, key_b):
        report = usage(server, key, start_time=start)
        assert report["object"] == "page" and report["has_more"] is False
        got = sum((Decimal(r["amount"]) for r in rows(report)), Decimal(0))
        assert got == expected.total(), (got, expected.total(), report)
        assert {r["currency"] for r in rows(report)} == {"usd"}
        assert sum(r["requests"] for r in rows(report)) == 9
        assert sum(r["video_seconds"] for r in rows(report)) == expected.quantity(kind="video_seconds")
    balance_after = Decimal(server.admin("org", "show", "--org", server.org)["balance"])
    assert balance_before - balance_after == expected.total(), "the report is the ledger"

    by_key = {r["api_key_id"]: Decimal(r["amount"]) for r in rows(usage(server, key_b, start_time=start, group_by="api_key"))}
    assert len(by_key) == 3 and by_key[key_b_id] == expected.total(key="b"), by_key
    assert by_key["console"] == expected.total(key="console")
    (key_a_id,) = [k for k in by_key if k not in (key_b_id, "console")]
    assert key_a_id.startswith("key_") and by_key[key_a_id] == expected.total(key="a")
    keys = {"a": key_a_id, "b": key_b_id, "console": "console"}

    by_model = {r["model"]: Decimal(r["amount"]) for r in rows(usage(server, key_a, start_time=start, group_by="model"))}
    assert by_model == {m: expected.total(model=m) for m in ("cached-chat", "plain-chat", "reel-1")}

    by_kind = rows(usage(server, key_a, start_time=start, group_by="kind"))
    for kind in ("input_tokens", "cached_input_tokens", "output_tokens", "video_seconds"):
        (row,) = [r for r in by_kind if r["kind"] == kind]
        assert Decimal(row["amount"]) == expected.total(kind=kind), row
        assert row[kind] == expected.quantity(kind=kind), row

    # Every dimension at once: each (model, key, kind) cell is exact.
    cells = rows(usage(server, key_a, start_time=start, group_by=["model", "api_key", "kind"]))
    name_of = {v: k for k, v in keys.items()}
    seen = set()
    for r in cells:
        cell = dict(model=r["model"], key=name_of[r["api_key_id"]], kind=r["kind"])
        assert Decimal(r["amount"]) == expected.total(**cell), r
        assert r[r["kind"]] == expected.quantity(**cell), r
        seen.add(tuple(cell.values()))
    assert seen == {(m, k, kind) for m, k, kind, q, a in expected.rows if q or a}

    # The operator's command prints the same report.
    admin = server.admin("usage", "--org", server.org, "--since", str(start), "--group-by", "model,kind")
    api = usage(server, key_a, start_time=start, group_by=["model", "kind"])
    assert [b["results"] for b in admin["data"] if b["results"]] == [b["results"] for b in api["data"] if b["results"]]
    assert [Decimal(t["amount"]) for t in admin["totals"]] == [expected.total()]

    # The console's usage page shows the same by model and key (its rows split by kind too).
    with server.console() as console:
        page = console.get("/console/api/usage").json()
    shown = {}
    for r in page["last_30_days"]:
        cell = (r["model"], name_of[r["api_key_id"]])
        shown[cell] = shown.get(cell, Decimal(0)) + Decimal(r["amount"])
    assert shown == {
        (m, k): expected.total(model=m, key=k) for m, k, _, q, a in expected.rows if q or a
    }


def test_days_page_and_bad_parameters_name_the_parameter(world):
    server = world
    today = int(time.time()) // 86400 * 86400
    seen = []
    params = {"start_time": today - 2 * 86400, "limit": 1}
    while True:
        page = usage(server, server.api_key, **params)
        assert len(page["data"]) == 1
        seen += page["data"]
        if not page["has_more"]:
            assert page["next_page"] is None
            break
        params["page"] = page["next_page"]
    assert [b["start_time"] for b in seen] == [today - 2 * 86400, today - 86400, today]
    assert all(b["end_time"] - b["start_time"] == 86400 for b in seen)
    for query, param in (
        ({}, "start_time"),
        ({"start_time": "yesterday"}, "start_time"),
        ({"start_time": 2**63 - 1}, "start_time"),
        ({"start_time": 100, "end_time": 2**63 - 1}, "end_time"),
        ({"start_time": 100, "end_time": 50}, "end_time"),
        ({"start_time": 100, "group_by": "person"}, "group_by"),
        ({"start_time": 100, "limit": 32}, "limit"),
        ({"start_time": 100, "page": "day_5"}, "page"),
    ):
        r = httpx.get(f"{server.base_url}/v1/usage", headers=auth(server.api_key), params=query)
        assert r.status_code == 400, (query, r.text)
        assert r.json()["error"]["param"] == param, (query, r.text)
    r = httpx.get(f"{server.base_url}/v1/usage", params={"start_time": 100})
    assert r.status_code == 401
