"""The native `anthropic` upstream, and coding agents through the gateway, against the real binary.

Over tests/python/fake_anthropic.py (Anthropic's Messages API, strict, with its prompt cache and
signed thinking): the Anthropic SDKs' `cache_control` reaches Anthropic where the client put it,
with the operator's key as `x-api-key`; thinking signatures and `redacted_thinking` round-trip;
OpenAI callers are translated onto the Messages API. Over both fakes (Anthropic and Bedrock
Converse): a ten-turn agent loop with tools through `messages.stream` reads the cache from turn
two, its summed `usage.cost` equals the balance's drop and `/v1/usage`, and it costs at most a
third of the same loop with caching off."""

import os
import shutil
import subprocess
import sys
import time
from decimal import Decimal

import anthropic
import httpx
import openai
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from harness import FakeAnthropic, FakeConverse, serving  # noqa: E402

DIRECT = FakeAnthropic.MODEL_ID
AUTO = "claude-direct-auto"
BEDROCK = "claude-on-bedrock-priced"
EPHEMERAL = {"type": "ephemeral"}
HOUR = {"type": "ephemeral", "ttl": "1h"}
SYSTEM = " ".join(f"Rule {i}: read the code before you change it." for i in range(300))
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
REDACT = "ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_46C9A13E193C177646C7398A98432ECCCE4C1253D5E2D82641AC0E52CC2876CB"


class Site:
    def __init__(self, server, anthropic_fake, converse_fake):
        self.server, self.direct, self.converse = server, anthropic_fake, converse_fake

    def tenant(self, name):
        org = self.server.admin("org", "create", "--name", name, "--plan", "enterprise", "--credits", "50.00")
        user = self.server.admin("user", "create", "--org", org["id"], "--email", f"{name.lower()}@example.test")
        key = self.server.admin("key", "create", "--user", user["id"])["secret"]
        return org["id"], key

    def balance(self, org):
        return Decimal(self.server.admin("org", "show", "--org", org)["balance"])

    def sent(self):
        return [r for r in self.direct.requests() if r["path"].startswith("/v1/messages") and r["status"] == 200]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    # Real input counts on both fakes, so the loop without caching is billed what it sent.
    direct, converse = FakeAnthropic(), FakeConverse(count_input=True)
    try:
        path = str(tmp_path_factory.mktemp("cat") / "c.toml")
        direct.catalog(path)
        with open(path) as f:
            text = f.read()
        text += f"""
[[chat_models]]
id = "{AUTO}"
upstream = "anthropic"
upstream_model = "{FakeAnthropic.UPSTREAM_MODEL}"
capabilities = ["text", "tools"]
auto_cache = true
input_per_million = "3.00"
output_per_million = "15.00"
cached_input_per_million = "0.30"
cache_write_per_million = "3.75"

[[upstreams]]
id = "bedrock"
kind = "bedrock"
region = "us-east-1"
base_url = "{converse.url}"

[[chat_models]]
id = "{BEDROCK}"
upstream = "bedrock"
upstream_model = "{FakeConverse.UPSTREAM_MODEL}"
capabilities = ["text", "tools"]
input_per_million = "3.00"
output_per_million = "15.00"
cached_input_per_million = "0.30"
cache_write_per_million = "3.75"
"""
        with open(path, "w") as f:
            f.write(text)
        with serving(env={**FakeConverse.ENV, **FakeAnthropic.ENV, "REELGATE_CATALOG": path}) as server:
            yield Site(server, direct, converse)
    finally:
        direct.stop()
        converse.stop()


def client(site, key):
    return anthropic.Anthropic(base_url=site.server.base_url, api_key=key, max_retries=0)


def streamed(stream):
    """A stream's final message and its charge: the SDK's snapshot keeps message_delta's counts
    but not reelgate's `cost` beside them, so it is read off the event."""
    cost = None
    for event in stream:
        if event.type == "message_delta":
            cost = event.usage.cost
    return stream.get_final_message(), Decimal(cost)


def cached(question, model=DIRECT):
    return dict(
        model=model,
        max_tokens=200,
        # One-hour entries first (tools, system), as Anthropic requires; five minutes after.
        system=[{"type": "text", "text": SYSTEM, "cache_control": HOUR}],
        tools=[{**WEATHER, "cache_control": HOUR}],
        messages=[{"role": "user", "content": [{"type": "text", "text": question, "cache_control": EPHEMERAL}]}],
    )


def test_cache_control_reaches_anthropic_where_the_client_put_it_with_the_operators_key(site):
    site.direct.reset()
    org, key = site.tenant("Direct")
    c = client(site, key)
    before = site.balance(org)
    raw = c.messages.with_raw_response.create(**cached("Say hello."))
    first = raw.parse()
    request = site.sent()[-1]
    assert request["headers"]["x-api-key"] and request["headers"]["x-api-key-valid"]
    assert request["headers"]["anthropic-version"] == "2023-06-01"
    body = request["body"]
    # The caller's own body, as sent, with the upstream's model name.
    assert body["model"] == FakeAnthropic.UPSTREAM_MODEL
    assert body["system"][0]["cache_control"] == HOUR
    assert body["tools"][0]["cache_control"] == HOUR
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    assert first.model == DIRECT and first.id.startswith("msg_")
    assert first.usage.cache_creation_input_tokens > 1000 and first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation.ephemeral_1h_input_tokens > 0
    assert raw.headers["x-reelgate-cost"] == first.usage.cost
    assert before - site.balance(org) == Decimal(first.usage.cost)

    again = c.messages.create(**cached("Say hello."))
    assert again.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert again.usage.cache_creation_input_tokens == 0
    assert before - site.balance(org) == Decimal(first.usage.cost) + Decimal(again.usage.cost)

    # The count is Anthropic's own, over the caller's body.
    counted = c.messages.count_tokens(model=DIRECT, system=SYSTEM, messages=[{"role": "user", "content": "Say hello."}])
    assert counted.input_tokens == len(SYSTEM.split()) + 2


def test_a_native_stream_is_anthropics_own_with_our_id_and_the_charge(site):
    org, key = site.tenant("Streamer")
    c = client(site, key)
    before = site.balance(org)
    events = []
    with c.messages.stream(**cached("Weather in Paris?")) as stream:
        for e in stream:
            events.append(e.type)
            if e.type == "message_delta":
                cost = Decimal(e.usage.cost)
        final = stream.get_final_message()
    assert final.id.startswith("msg_") and final.model == DIRECT
    assert [b.type for b in final.content] == ["tool_use", "tool_use"]
    assert final.stop_reason == "tool_use"
    assert "input_json" in events and events[-1] == "message_stop"
    assert before - site.balance(org) == cost


def test_thinking_signatures_and_redacted_thinking_round_trip(site):
    _, key = site.tenant("Thinker")
    c = client(site, key)
    history = [{"role": "user", "content": f"Weather in Paris? {REDACT}"}]
    ask = dict(model=DIRECT, max_tokens=4000, tools=[WEATHER], thinking={"type": "enabled", "budget_tokens": 2000})
    first = c.messages.create(**ask, messages=history)
    kinds = [b.type for b in first.content]
    assert kinds[:2] == ["thinking", "redacted_thinking"] and "tool_use" in kinds
    assert first.content[0].signature
    history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
    history.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": b.id, "content": f"sunny in {b.input['city']}"}
        for b in first.content if b.type == "tool_use"]})
    # The fake verifies the signature and the redacted data it issued: both came back intact.
    second = c.messages.create(**ask, messages=history)
    assert second.content[-1].text.startswith("Weather: sunny in")
    # Streamed too: the signature arrives as Anthropic's signature_delta, and goes back.
    with c.messages.stream(**ask, messages=history[:1]) as stream:
        streamed = stream.get_final_message()
    assert streamed.content[0].type == "thinking" and streamed.content[0].signature
    tampered = [dict(b, signature="forged") if b.get("type") == "thinking" else b for b in history[1]["content"]]
    with pytest.raises(anthropic.BadRequestError) as e:
        c.messages.create(**ask, messages=[history[0], {"role": "assistant", "content": tampered}, history[2]])
    assert "signature" in str(e.value)


def test_openai_callers_are_translated_onto_the_messages_api(site):
    org, key = site.tenant("OpenAICaller")
    oc = openai.OpenAI(base_url=f"{site.server.base_url}/v1", api_key=key, max_retries=0)
    tools = [{"type": "function", "function": {"name": "get_weather", "description": WEATHER["description"],
                                               "parameters": WEATHER["input_schema"]}}]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Weather in Paris?"}]
    site.direct.reset()
    first = oc.chat.completions.create(model=AUTO, messages=messages, tools=tools)
    body = site.sent()[-1]["body"]
    # auto_cache: a point after the system prompt and at the end of the conversation.
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}]
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    assert body["max_tokens"] > 0
    calls = first.choices[0].message.tool_calls
    assert first.choices[0].finish_reason == "tool_calls" and [c.function.name for c in calls] == ["get_weather"] * 2
    assert first.usage.prompt_tokens_details.cache_write_tokens > 1000
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages += [{"role": "tool", "tool_call_id": c.id, "content": "sunny"} for c in calls]
    second = oc.chat.completions.create(model=AUTO, messages=messages, tools=tools, stream=True,
                                        stream_options={"include_usage": True})
    chunks = list(second)
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text.startswith("Weather: sunny")
    usage = chunks[-1].usage
    assert usage.prompt_tokens_details.cached_tokens > 1000
    assert Decimal(usage.cost) > 0
    # Responses onto the same upstream: a write, then a read on the repeat.
    r = oc.responses.create(model=AUTO, instructions=SYSTEM, input="Say hello.")
    assert r.output_text == "Hello from the fake upstream."
    assert r.usage.input_tokens_details.cache_write_tokens > 1000
    r2 = oc.responses.create(model=AUTO, instructions=SYSTEM, input="Say hello.")
    assert r2.usage.input_tokens_details.cached_tokens == r.usage.input_tokens_details.cache_write_tokens


def agent_loop(site, model, key, caching):
    """Ten turns of a coding agent: each turn one `messages.stream` call; a tool_use answer is
    followed by its results, a text answer by the next question. Returns each turn's usage."""
    c = client(site, key)
    tools = [dict(WEATHER, cache_control=EPHEMERAL) if caching else WEATHER]
    system = [{"type": "text", "text": SYSTEM, **({"cache_control": EPHEMERAL} if caching else {})}]
    history, usages, question = [], [], 0
    cities = ["Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Perth"]
    for _turn in range(10):
        if not history or history[-1]["role"] == "assistant" and not any(
                b["type"] == "tool_use" for b in history[-1]["content"]):
            history.append({"role": "user", "content": [{"type": "text", "text": f"Weather in {cities[question]}?"}]})
            question += 1
        # Only the newest block carries the moving breakpoint (tools, system and it: three).
        for m in history:
            for b in m["content"]:
                b.pop("cache_control", None)
        if caching:
            history[-1]["content"][-1]["cache_control"] = EPHEMERAL
        with c.messages.stream(model=model, max_tokens=200, system=system, tools=tools, messages=history) as stream:
            final, cost = streamed(stream)
        usages.append((final.usage, cost))
        history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]})
        calls = [b for b in final.content if b.type == "tool_use"]
        if calls:
            history.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b.id, "content": f"sunny in {b.input['city']}"} for b in calls]})
    return usages


@pytest.mark.parametrize("model", [DIRECT, BEDROCK])
def test_a_ten_turn_agent_loop_reads_the_cache_and_costs_a_third(site, model):
    site.direct.reset()
    site.converse.reset()
    since = int(time.time()) - 60
    org, key = site.tenant(f"Agent{model.replace('-', '')}")
    before = site.balance(org)
    usages = agent_loop(site, model, key, caching=True)
    assert all(u.cache_read_input_tokens > 1000 for u, _ in usages[1:]), [u.cache_read_input_tokens for u, _ in usages]
    cost = sum(c for _, c in usages)
    assert before - site.balance(org) == cost
    r = httpx.get(f"{site.server.base_url}/v1/usage", params={"start_time": since, "group_by": "model"},
                  headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert r.status_code == 200, r.text
    assert sum(Decimal(x["amount"]) for b in r.json()["data"] for x in b["results"] if x["model"] == model) == cost

    plain_org, plain_key = site.tenant(f"Plain{model.replace('-', '')}")
    plain = agent_loop(site, model, plain_key, caching=False)
    assert all(u.cache_read_input_tokens == 0 for u, _ in plain)
    plain_cost = sum(c for _, c in plain)
    print(f"\n{model}: ten turns cost {cost} with caching, {plain_cost} without ({cost / plain_cost:.3f})")
    assert cost * 3 <= plain_cost


@pytest.mark.skipif(shutil.which("node") is None, reason="node is installed by scripts/test-tools.sh")
@pytest.mark.parametrize("model", [DIRECT, BEDROCK])
def test_the_anthropic_node_sdk_caches_over_both_upstreams(site, model):
    from test_node_sdk import NODE_MODULES

    suite = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node", "anthropic_caching.test.cjs")
    site.direct.reset()
    site.converse.reset()
    _, key = site.tenant(f"Node{model.replace('-', '')}")
    env = {**os.environ, "NODE_PATH": NODE_MODULES, "SDK_SERVER_URL": site.server.base_url, "SDK_API_KEY": key,
           "SDK_MODEL": model, "SDK_SYSTEM": SYSTEM}
    run = subprocess.run(["node", "--test", "--test-reporter=spec", suite], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert "# fail 0" in run.stdout or "ℹ fail 0" in run.stdout, run.stdout[-3000:]
    sent = site.sent() if model == DIRECT else [r for r in site.converse.requests() if r["operation"] == "converse"]
    assert sent, "the Node SDK's requests reached the upstream"
