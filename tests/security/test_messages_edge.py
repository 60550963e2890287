"""The Messages API's new trust boundaries (docs/security.md, "The Messages API's edge").

1. An image or document URL in a /v1/messages request is fetched by the service itself, so it
   goes through the guarded fetcher: a loopback host (and a redirect to one) is refused, and the
   private host sees no request at all; the answer says only that the URL was refused.
2. A second way to send the key (`x-api-key`) must not let a request name two keys: when
   `x-api-key` and `Authorization` disagree the request is refused before anything runs, and
   neither key's organization is charged (measured in GET /v1/usage).
"""

import tempfile
import time

import httpx
import pytest

from conftest import FAKE_PUBLIC_IP, PRIVATE_MARKER, auth, start_server


def message(server, content, headers):
    body = {"model": "fake-model-v1", "max_tokens": 20, "messages": [{"role": "user", "content": content}]}
    return httpx.post(f"{server.base_url}/v1/messages", headers=headers, json=body, timeout=60)


def requests_billed(server, key):
    """Requests in the key's organization's usage today (GET /v1/usage): one per charge."""
    r = httpx.get(f"{server.base_url}/v1/usage", params={"start_time": int(time.time()) - 86400},
                  headers=auth(key), timeout=30)
    assert r.status_code == 200, r.text
    return sum(res.get("requests", 0) for b in r.json()["data"] for res in b["results"])


def test_an_image_url_on_a_private_host_is_refused_without_a_request_reaching_it(server, tenant, private_host, public_host):
    before = len(private_host.hits)
    for url in (f"{private_host.base}/secret", f"{public_host.base}/redirect?to={private_host.base}/secret"):
        r = message(server, [{"type": "image", "source": {"type": "url", "url": url}}], {"x-api-key": tenant["key"]})
        assert r.status_code == 400, r.text
        err = r.json()
        assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
        assert "refused" in err["error"]["message"] and PRIVATE_MARKER not in r.text
    # Measured: the private host was never asked.
    assert len(private_host.hits) == before


def test_two_different_keys_are_refused_and_charge_nobody(server, tenant):
    other = server.admin("org", "create", "--name", "Other", "--credits", "20.00")
    person = server.admin("user", "create", "--org", other["id"], "--email", "other@example.test")
    other_key = server.admin("key", "create", "--user", person["id"])["secret"]
    billed = (requests_billed(server, tenant["key"]), requests_billed(server, other_key))
    headers = {"x-api-key": tenant["key"], **auth(other_key)}
    r = message(server, "hi", headers)
    assert r.status_code == 401, r.text
    assert r.json()["error"]["type"] == "authentication_error"
    assert (requests_billed(server, tenant["key"]), requests_billed(server, other_key)) == billed
    # The same key both ways is one key.
    same = message(server, "hi", {"x-api-key": tenant["key"], **auth(tenant["key"])})
    assert same.status_code == 200, same.text
    assert requests_billed(server, tenant["key"]) == billed[0] + 1


def test_count_tokens_does_no_work_for_an_unfunded_key(server, tenant, public_host):
    """3. `count_tokens` is admitted as a message is: a key whose organization has no credit is
    refused (402) before the service fetches anything on its behalf (the URL's host sees no
    request), and a funded key's count still fetches and answers."""
    broke = server.admin("org", "create", "--name", "Broke", "--credits", "0.00")
    person = server.admin("user", "create", "--org", broke["id"], "--email", "broke@example.test")
    broke_key = server.admin("key", "create", "--user", person["id"])["secret"]
    url = f"{public_host.base}/file.txt?count-tokens"
    body = {"model": "fake-model-v1", "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": url}}, {"type": "text", "text": "what is this?"}]}]}
    before = len([h for h in public_host.hits if "count-tokens" in h])
    r = httpx.post(f"{server.base_url}/v1/messages/count_tokens", headers={"x-api-key": broke_key}, json=body, timeout=60)
    print(f"\nunfunded count_tokens: {r.status_code}; fetches of its URL: "
          f"{len([h for h in public_host.hits if 'count-tokens' in h]) - before}")
    assert r.status_code == 402, r.text
    assert r.json()["error"]["type"] == "billing_error"
    assert len([h for h in public_host.hits if "count-tokens" in h]) == before, "nothing fetched"
    funded = httpx.post(f"{server.base_url}/v1/messages/count_tokens", headers={"x-api-key": tenant["key"]},
                        json={"model": "fake-model-v1", "messages": [{"role": "user", "content": "hello"}]}, timeout=60)
    assert funded.status_code == 200, funded.text
    assert funded.json()["input_tokens"] > 0


def test_one_requests_urls_together_are_bounded(server, tenant, public_host):
    """4. One request's URLs share one fetch budget (50 MiB): four 30 MiB image URLs in one
    count_tokens request are refused at the second, naming its URL, and the server's peak RSS
    grows by about one file, not four (before: four 32 MiB URLs took +513 MiB)."""
    from harness import peak_rss_kib

    urls = [f"{public_host.base}/bigpng?mb=30&n={i}" for i in range(4)]
    body = {"model": "fake-model-v1", "messages": [{"role": "user", "content": [
        *({"type": "image", "source": {"type": "url", "url": u}} for u in urls), {"type": "text", "text": "count"}]}]}
    before = peak_rss_kib(server.proc.pid) / 1024
    hits = len(public_host.hits)
    r = httpx.post(f"{server.base_url}/v1/messages/count_tokens", headers={"x-api-key": tenant["key"]}, json=body,
                   timeout=120)
    peak = peak_rss_kib(server.proc.pid) / 1024
    print(f"\nfour 30 MiB image URLs: {r.status_code} after {len(public_host.hits) - hits} fetches; "
          f"peak RSS {before:.0f} -> {peak:.0f} MiB")
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert "together" in err["message"] and "messages.0.content.1.source.url" in err["message"], err
    assert len(public_host.hits) - hits == 2, "the third and fourth URLs were never fetched"


@pytest.fixture()
def fresh_server(upstream):
    """A server of its own: VmHWM is a high-water mark, so the count is measured alone."""
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(data_dir, env={
            "REELGATE_UPSTREAM_BASE_URL": upstream.url,
            "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision",
            "REELGATE_FETCH_ALLOW": FAKE_PUBLIC_IP,
            "REELGATE_LOG": "warn",
        })
        try:
            yield srv
        finally:
            srv.stop()


def test_a_count_measures_each_url_and_keeps_none_of_their_bytes(fresh_server, public_host):
    """4. A token count reads each image URL, measures it (Anthropic's width x height / 750) and
    drops it before the next: two 20 MiB images under the request's 50 MiB fetch budget are
    counted, and the server's peak RSS grows by about one file, not by both (their base64 copies
    in the translated request took four times that before)."""
    from harness import peak_rss_kib

    server = fresh_server
    org = server.admin("org", "create", "--name", "Counter", "--credits", "10.00")
    person = server.admin("user", "create", "--org", org["id"], "--email", "counter@example.test")
    tenant = {"key": server.admin("key", "create", "--user", person["id"])["secret"]}
    urls = [f"{public_host.base}/bigpng?mb=20&w=750&h=500&n={i}" for i in range(2)]
    body = {"model": "fake-model-v1", "messages": [{"role": "user", "content": [
        *({"type": "image", "source": {"type": "url", "url": u}} for u in urls), {"type": "text", "text": "count"}]}]}
    text_only = {"model": "fake-model-v1", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "[image]"}, {"type": "text", "text": "[image]"}, {"type": "text", "text": "count"}]}]}
    headers = {"x-api-key": tenant["key"]}
    base = httpx.post(f"{server.base_url}/v1/messages/count_tokens", headers=headers, json=text_only, timeout=60)
    assert base.status_code == 200, base.text
    before = peak_rss_kib(server.proc.pid) / 1024
    r = httpx.post(f"{server.base_url}/v1/messages/count_tokens", headers=headers, json=body, timeout=120)
    peak = peak_rss_kib(server.proc.pid) / 1024
    print(f"\ntwo 20 MiB image URLs counted: {r.status_code} {r.text}; peak RSS {before:.0f} -> {peak:.0f} MiB "
          f"(+{peak - before:.0f})")
    assert r.status_code == 200, r.text
    # 750 x 500 / 750 = 500 tokens each, beside what the placeholders and the text count.
    assert r.json()["input_tokens"] == base.json()["input_tokens"] + 2 * 500
    assert peak - before < 45, f"+{peak - before:.0f} MiB: more than one 20 MiB file was held"
