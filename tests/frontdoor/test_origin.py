"""The origin check of the real binary: refused without the origin secret, served with it, the
header compared exactly, the caller's key read from the relayed header only behind a valid secret,
and the OpenAI SDK working through a relay that behaves like the CloudFront function."""

import httpx
import openai
import pytest

from frontdoor_secrets import SECONDARY, SECRET

ORIGIN = "x-reelgate-origin-secret"
RELAYED = "x-reelgate-authorization"


def error_code(r):
    return r.json()["error"]["code"]


def test_without_the_secret_nothing_is_served(guarded):
    key = f"Bearer {guarded.api_key}"
    for path in ["/v1/models", "/v1/files", "/v1/videos", "/v1/unknown"]:
        r = httpx.get(guarded.base_url + path, headers={"Authorization": key})
        assert r.status_code == 403, (path, r.text)
        assert error_code(r) == "origin_forbidden"
        assert r.json()["error"]["type"] == "permission_error"
    r = httpx.post(
        guarded.base_url + "/v1/chat/completions",
        headers={"Authorization": key},
        json={"model": "x", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert r.status_code == 403 and error_code(r) == "origin_forbidden"
    # The health check reveals nothing and stays open for probes.
    assert httpx.get(guarded.base_url + "/health").status_code == 200


@pytest.mark.parametrize(
    "presented",
    [
        "",
        SECRET[:-1],
        SECRET + "x",
        SECRET.upper(),
        "X" + SECRET[1:],
        SECRET[:-1] + "X",
        f"{SECRET},{SECONDARY}",
    ],
    ids=["empty", "prefix", "longer", "case", "first-byte", "last-byte", "both-joined"],
)
def test_the_secret_is_compared_exactly(guarded, presented):
    r = httpx.get(
        guarded.base_url + "/v1/models",
        headers={ORIGIN: presented, RELAYED: f"Bearer {guarded.api_key}"},
    )
    assert r.status_code == 403, r.text
    assert error_code(r) == "origin_forbidden"


def test_behind_the_secret_the_key_comes_from_the_relayed_header(guarded):
    url = guarded.base_url + "/v1/models"
    key = f"Bearer {guarded.api_key}"
    for secret in [SECRET, SECONDARY]:
        # What a function URL receives: CloudFront's signature in Authorization, the key relayed.
        r = httpx.get(
            url,
            headers={
                ORIGIN: secret,
                "Authorization": "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/cloudfront",
                RELAYED: key,
            },
        )
        assert r.status_code == 200, r.text
        assert r.json()["object"] == "list"
    # The caller's key in Authorization alone is not read behind the door.
    r = httpx.get(url, headers={ORIGIN: SECRET, "Authorization": key})
    assert r.status_code == 401 and error_code(r) == "missing_api_key", r.text
    # A wrong relayed key is just that.
    r = httpx.get(url, headers={ORIGIN: SECRET, RELAYED: "Bearer rgk_0000_nope"})
    assert r.status_code == 401 and error_code(r) == "invalid_api_key", r.text


def test_without_a_configured_secret_the_relayed_header_is_ignored(open_server):
    url = open_server.base_url + "/v1/models"
    r = httpx.get(url, headers={RELAYED: f"Bearer {open_server.api_key}"})
    assert r.status_code == 401 and error_code(r) == "missing_api_key", r.text
    r = httpx.get(url, headers={"Authorization": f"Bearer {open_server.api_key}"})
    assert r.status_code == 200, r.text


def test_the_openai_sdk_through_a_relay_like_the_distribution(guarded):
    """The SDK talks to one base URL; an httpx hook does what the distribution does to each
    request (relay Authorization, replace it as origin access control would, add the secret)."""

    def front_door(request: httpx.Request):
        request.headers[RELAYED] = request.headers["Authorization"]
        request.headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/cloudfront"
        request.headers[ORIGIN] = SECRET

    http = httpx.Client(event_hooks={"request": [front_door]})
    client = openai.OpenAI(
        base_url=guarded.base_url + "/v1", api_key=guarded.api_key, http_client=http
    )
    models = client.models.list()
    assert models.object == "list"
    # Without the door the same SDK call is refused.
    bare = openai.OpenAI(base_url=guarded.base_url + "/v1", api_key=guarded.api_key)
    with pytest.raises(openai.PermissionDeniedError) as e:
        bare.models.list()
    assert e.value.code == "origin_forbidden"
