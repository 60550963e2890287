"""Item 1: server-side fetches of caller-supplied URLs go through the guarded fetcher.

Attacks `POST /v1/responses` with an `input_file.file_url` (the service fetches it itself) on the
real binary. The local test servers all live on loopback, so the security server's allow list
(REELGATE_FETCH_ALLOW=127.0.0.2) is what lets the fake public host through; a second server
without the allow list shows that.
"""

import tempfile

import httpx
import pytest

from conftest import FAKE_PUBLIC_IP, PRIVATE_MARKER, PUBLIC_TEXT, auth, start_server


def ask(server, url, key=None):
    body = {
        "model": "fake-model-v1",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "read this"},
                    {"type": "input_file", "file_url": url},
                ],
            }
        ],
    }
    return httpx.post(
        f"{server.base_url}/v1/responses",
        headers=auth(key or server.api_key),
        json=body,
        timeout=60,
    )


def assert_refused(r, code="url_refused"):
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == code, r.text
    assert err["param"] == "file_url", r.text
    assert PRIVATE_MARKER not in r.text
    return err


@pytest.mark.parametrize(
    "target",
    [
        "http://127.0.0.1:{p}/secret",
        "http://10.0.0.1:{p}/secret",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://[::1]:{p}/secret",
        "http://[::ffff:127.0.0.1]:{p}/secret",
        "http://localhost:{p}/secret",  # a DNS name that resolves to loopback
        "http://[64:ff9b::7f00:1]:{p}/secret",  # NAT64-embedded 127.0.0.1
        "http://[2002:7f00:1::1]:{p}/secret",  # 6to4-embedded 127.0.0.1
        "http://100.64.0.1:{p}/secret",  # CGNAT
        "http://198.18.0.1:{p}/secret",  # benchmarking
        "http://[fd00:ec2::254]/latest/meta-data/",  # the EC2 IPv6 metadata address
    ],
)
def test_private_and_metadata_targets_are_refused_before_any_connection(server, private_host, target):
    before = len(private_host.hits)
    r = ask(server, target.format(p=private_host.port))
    err = assert_refused(r)
    assert "refused" in err["message"], err
    assert len(private_host.hits) == before, "the private host was contacted"


def test_non_http_schemes_are_refused(server):
    for url in ["file:///etc/passwd", "gopher://127.0.0.2:70/x", "ftp://127.0.0.2/x"]:
        assert_refused(ask(server, url))


def test_the_allow_list_is_what_lets_the_fake_public_host_through(server, upstream, public_host):
    url = f"{public_host.base}/file.txt"
    r = ask(server, url)
    assert r.status_code == 200, r.text
    forwarded = str(upstream.requests()[-1])
    assert PUBLIC_TEXT in forwarded, "the fetched file should reach the model"
    # The same binary without REELGATE_FETCH_ALLOW refuses the same host.
    with tempfile.TemporaryDirectory() as data_dir:
        strict = start_server(
            data_dir,
            env={
                "REELGATE_UPSTREAM_BASE_URL": upstream.url,
                "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision",
            },
        )
        try:
            before = len(public_host.hits)
            assert_refused(ask(strict, url))
            assert len(public_host.hits) == before
        finally:
            strict.stop()


def test_a_malformed_allow_list_stops_start_up(upstream):
    with tempfile.TemporaryDirectory() as data_dir:
        with pytest.raises(RuntimeError):
            start_server(data_dir, env={"REELGATE_FETCH_ALLOW": "10.0.0.0/99"})


def test_redirects_are_followed_only_through_the_same_check(server, upstream, public_host, private_host):
    # Allowed host -> allowed host: followed (the redirect is not refused as such).
    ok = f"{public_host.base}/redirect?to={public_host.base}/file.txt"
    r = ask(server, ok)
    assert r.status_code == 200, r.text
    assert PUBLIC_TEXT in str(upstream.requests()[-1])
    # Allowed host -> private host: refused, and the private host never sees a request.
    before = len(private_host.hits)
    bad = f"{public_host.base}/redirect?to=http://127.0.0.1:{private_host.port}/secret"
    assert_refused(ask(server, bad))
    bad6 = f"{public_host.base}/redirect?to=http://[::1]:{private_host.port}/secret"
    assert_refused(ask(server, bad6))
    meta = f"{public_host.base}/redirect?to=http://169.254.169.254/latest/meta-data/"
    assert_refused(ask(server, meta))
    assert len(private_host.hits) == before


def test_an_oversized_body_is_cut_off_while_streaming(server, public_host):
    # 60 MiB without Content-Length: the limit (50 MiB) must be enforced while reading.
    r = ask(server, f"{public_host.base}/big?mb=60")
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "file_url"
    assert "larger than" in err["message"], err


def test_unreachable_hosts_say_unreachable_not_what_answered(server, public_host):
    # A 404 from an allowed host and a closed port: 400 url_unreachable, no body echoed.
    r = ask(server, f"{public_host.base}/missing")
    assert_refused(r, code="url_unreachable")
    assert "nope" not in r.text
    r = ask(server, f"http://{FAKE_PUBLIC_IP}:9/x")
    assert_refused(r, code="url_unreachable")
