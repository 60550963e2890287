"""FakeAnthropic: a tiny Anthropic Messages API (create, stream, count_tokens) for tests.

It is a fake, for tests only: it speaks the Messages API's wire protocol with scripted,
deterministic answers (the same script as fake_upstream.py and fake_converse.py, so one test can
run over all three) and it refuses what the real API refuses, so that the tests catch a gateway
sending Anthropic something it would not take. Written from Anthropic's public API reference
(Messages, count_tokens, streaming, prompt caching, extended thinking, errors).

    python fake_anthropic.py [--port PORT] [--gap-ms MS] [--api-key KEY]
    python fake_anthropic.py --self-test

prints `FAKE_ANTHROPIC_URL=http://127.0.0.1:<port>` on its first line once it listens (port 0
picks a free port). Point the `anthropic` SDK's `base_url` at it with the API key (default
`fake-anthropic-key`).

Endpoints:

- POST /v1/messages               -> a Message, or SSE with `"stream": true`;
- POST /v1/messages/count_tokens  -> `{"input_tokens": n}`;
  (a query string such as the SDK's `?beta=true` is ignored)
- GET  /_fake/requests -> every request the two endpoints received, in order, refused ones
  included: `[{"path", "method", "headers": {"x-api-key": present?, "authorization-bearer":
  present?, "x-api-key-valid" (the key given, either way, is --api-key),
  "anthropic-version", "anthropic-beta": [names] | null, "content-type"}, "body": <JSON body, or
  null when it was not JSON>, "status": <HTTP status answered>, "error": <message> | null,
  "request_id"}]`;
- GET  /_fake/cache -> the prompt cache: `[{"key", "model", "tokens", "ttl", "end": <path of the
  breakpoint block that wrote it>, "hits", "expires_in_s"}]` (live entries only);
- POST /_fake/reset -> forgets the recorded requests and empties the cache (a JSON body
  `{"requests": false}` or `{"cache": false}` keeps that part).

Every answer carries a `request-id: req_...` header. Errors use Anthropic's envelope,
`{"type": "error", "error": {"type": <kind>, "message": ...}, "request_id": "req_..."}`, with
400 invalid_request_error, 401 authentication_error, 404 not_found_error, 405 (method),
413 request_too_large. A streamed request that fails validation is answered the same way,
before any event.

Headers: the key, in `x-api-key` or as `Authorization: Bearer <key>` (how the anthropic SDK 2.x
sends an API key), must equal --api-key (neither -> 401 "x-api-key header is required", another
key -> 401 "invalid x-api-key"); the record says which header carried it (`x-api-key`,
`authorization-bearer`), so a test can check that a gateway sends `x-api-key`;
`anthropic-version` must be one of the two published versions (missing or other -> 400):
`2023-06-01`, or `2026-10-21` (what the anthropic SDK 2.x sends), which takes no temperature /
top_p / top_k ("temperature: Extra inputs are not permitted", even at default values), no
`document` block directly in an assistant message, and no non-empty `citations` on a text block
of a user message (directly or inside a search_result). The record keeps the version sent.
`anthropic-beta` is accepted and recorded (comma-separated names); the only one that changes
behaviour is `interleaved-thinking-2025-05-14`, which lifts "budget_tokens < max_tokens".

Models (404 not_found_error "model: <id>" for any other), each with its alias; the answer's
`model` is the id as requested. `min cache` is the shortest prefix the model caches, `max out`
the largest max_tokens:
  claude-sonnet-4-5, claude-sonnet-4-5-20250929           1024 / 64000
  claude-opus-4-1, claude-opus-4-1-20250805               1024 / 32000
  claude-sonnet-4-0, claude-sonnet-4-20250514             1024 / 64000
  claude-opus-4-0, claude-opus-4-20250514                 1024 / 32000
  claude-3-7-sonnet-latest, claude-3-7-sonnet-20250219    1024 / 64000
  claude-haiku-4-5, claude-haiku-4-5-20251001             4096 / 64000
  claude-3-5-haiku-latest, claude-3-5-haiku-20241022      2048 / 8192, no extended thinking.

Validation (each failure -> 400 invalid_request_error; messages in the API's own words where the
reference or real error reports show them, paths like `messages.1.content.0`):

- top level: create takes model, messages, max_tokens (required), system, metadata
  ({user_id}), stop_sequences, stream, temperature (0..1), top_p (0..1), top_k (>= 0) (these
  three in 2023-06-01 only), tools, tool_choice, thinking, service_tier (auto|standard_only)
  and cache_control (automatic caching); count_tokens takes model, messages (required),
  system, tools, tool_choice, thinking, cache_control. Anything else -> "<field>: Extra inputs
  are not permitted"; members the reference documents but this fake does not implement
  (container, mcp_servers, context_management, output_config, inference_geo, speed,
  diagnostics) -> 400 saying so.
  max_tokens is an integer >= 0 (0 pre-warms the cache: no content, stop_reason max_tokens) and
  at most the model's limit;
- messages: a non-empty list; roles user/assistant; the first is user; consecutive turns of one
  role are merged into one turn (as the API does); content a string or a list of blocks; every
  message has content except an optional final assistant message (prefill), which must not end
  in whitespace; text blocks are non-empty and not whitespace-only;
- blocks (closed: unknown members refused): user turns take text, image (base64
  jpeg/png/gif/webp whose bytes match the media type, or url), document (base64 pdf, text,
  content or url source), tool_result (string or text/image/document/search_result content),
  search_result; assistant turns take text, tool_use, server_tool_use, web_search_tool_result,
  thinking, redacted_thinking (and, in 2023-06-01 only, document). A block type of the
  reference this fake does not implement is refused saying so; any other type is refused as an
  unknown tag;
- tools: custom tools {name ([a-zA-Z0-9_-]{1,128}, unique), description?, input_schema (an
  object schema), cache_control?, type? "custom", strict?, input_examples?, defer_loading?,
  eager_input_streaming?}, and the Anthropic-defined web_search_20250305, bash_20250124,
  text_editor_20250124/20250429/20250728 with their documented members. tool_use/tool_result
  blocks need `tools`; tool_use ids are unique; every tool_use of an assistant turn followed by
  another turn is answered by a tool_result in that next turn, and a tool_result answers a
  tool_use of the turn just before it;
- tool_choice {type: auto|any|tool|none, name (tool), disable_parallel_tool_use}; only with tools;
- thinking {type: enabled, budget_tokens >= 1024 and < max_tokens, display?: summarized|omitted}
  or {type: disabled}; with thinking on: temperature only 1, top_p >= 0.95, no top_k, no forced
  tool_choice (any/tool), no prefill, and the assistant turn whose tool_use blocks the final
  tool_result turn answers must start with a thinking (or redacted_thinking) block;
- thinking blocks sent back must carry the signature this fake issued for their text ("Invalid
  `signature` in `thinking` block"); redacted_thinking blocks must be byte-identical to one this
  fake issued ("Invalid `data` in `redacted_thinking` block"). Both are HMACs under a fixed
  secret, so they survive a restart or reset.
- cache_control {type: "ephemeral", ttl?: "5m"|"1h"} on tool definitions, system text blocks and
  message content blocks (including blocks nested in tool_result / document content, which mark
  their enclosing block); not on thinking / redacted_thinking blocks (they have no such member);
  not on an empty text block ("<path>: cache_control cannot be set for empty text blocks");
  at most 4 ("A maximum of 4 blocks with cache_control may be provided. Found N."); a 1h one
  after a 5m one, in the order tools, system, messages, is refused. A top-level cache_control
  (automatic caching) marks the last block that can carry one (walking back past thinking and
  empty text blocks), is a no-op when that block already has the same one, takes one of the 4
  slots, and is refused when that block carries another TTL.

Token counting (deterministic; `words(s)` = the number of whitespace-separated words of s; a
JSON value counts as words(json.dumps(value, sort_keys=True))):
  tool definition: words(name) + words(description) + words(JSON input_schema); an
  Anthropic-defined tool: words(JSON of its definition without cache_control);
  text block (and a string system or content): words(text); image: 100; document: words(text
  source) or 100 for a pdf/url source, plus words(title) + words(context), a content source the
  sum of its blocks; tool_use / server_tool_use: words(name) + words(JSON input); tool_result:
  words(string content) or the sum of its blocks; search_result: words(title) + its texts;
  web_search_tool_result: words(JSON content); thinking: words(thinking); redacted_thinking: 16.
No per-message or per-request overhead: count_tokens answers the plain sum over tools, system
and messages, which also equals input_tokens + cache_creation_input_tokens +
cache_read_input_tokens of a create with the same prompt. Output tokens are counted the same
way over the answer's blocks (a pre-warm answers 0).

Prompt cache (in memory, per model): the prompt is a sequence of blocks in the order tools,
system, messages; each block boundary has a prefix token count and a prefix key (a chained
sha256 over the canonical JSON of the model and of each block with its cache_control removed;
the first message block also mixes in tool_choice and thinking, whose changes invalidate only
the messages part, as the reference says). As the reference describes:
  - writes happen only at breakpoints (blocks with cache_control, or the automatic one), and
    only for a prefix of at least the model's minimum; an entry lives 5 min or 1 h from its
    last use (a hit refreshes it);
  - reads: from each breakpoint the fake looks back at most 20 block boundaries (the
    breakpoint's own included) for an entry an earlier request wrote; A = the longest prefix
    found (or 0);
  - B = the prefix at the last 1h breakpoint beyond A (or A), C = the prefix at the last
    breakpoint that can be cached (or A);
  - usage: cache_read_input_tokens = A, cache_creation_input_tokens = C - A, split into
    cache_creation.ephemeral_1h_input_tokens = B - A and ephemeral_5m_input_tokens = C - B;
    input_tokens = the prompt total - C.
Without cache_control everything is input_tokens and the cache fields are 0. count_tokens
neither reads nor writes the cache.

Answers (like fake_upstream.py and fake_converse.py):
- tools given, the last turn is a user turn without tool_result blocks, tool_choice is not
  none, and it forces a tool (any/tool) or its text mentions "weather": tool_use blocks (ids
  `toolu_01...`), stop_reason `tool_use`. The tool is the forced one, else `get_weather` when
  declared, else the first custom tool; a tool whose name contains "weather" is called twice
  ({"city": "Paris"}, {"city": "Tokyo"}, the city put in its first required string property)
  unless disable_parallel_tool_use, any other once; its input fills each required property
  (string: the city, or the enum's first value; number 1; boolean true; array []; object {});
- the last user turn holds tool_result blocks: "Weather: <every tool_result of the conversation,
  in order, joined by '; '>" (each result its text contents joined by ' ');
- an image anywhere: "image <n> bytes png=<true|false>" (n decoded bytes), or "image url <url>";
- otherwise: "Hello from the fake upstream.".
The text is cut before the earliest stop sequence found (stop_reason `stop_sequence`,
`stop_sequence` the one matched) and after max_tokens words (stop_reason `max_tokens`), else
`end_turn`. With thinking enabled the answer starts with a thinking block, "Thinking about: <the
first 8 words of the last user text, or 'the tool results'>", signed with an HMAC of its text
(display "omitted": an empty text, signed as such); when the last user turn contains the
reference's test trigger (MAGIC_REDACTED below: ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_
followed by 64 hex digits), a redacted_thinking block with opaque `data` follows it. Message ids
are `msg_01...`; usage carries input_tokens, cache_creation_input_tokens,
cache_read_input_tokens, cache_creation, output_tokens and service_tier "standard".

Streaming (`"stream": true`) sends SSE, each event `event: <type>` + `data: <JSON with the same
type>`, `--gap-ms` apart (default 0), as one HTTP chunk each: message_start (the message with
empty content, stop_reason null, usage with the input and cache fields and output_tokens 1),
ping, then per block content_block_start / content_block_delta... / content_block_stop (text:
one text_delta per word, joining to the text; tool_use: starts with `input: {}`, then
input_json_delta pieces - an empty one, then three - joining to the JSON input; thinking:
starts with empty thinking and signature, thinking_delta pieces, then one signature_delta;
redacted_thinking: the whole block in its start), message_delta (stop_reason, stop_sequence,
cumulative usage) and message_stop.
"""

import argparse
import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

API_KEY = "fake-anthropic-key"
API_VERSIONS = ("2023-06-01", "2026-10-21")
SAMPLING_FIELDS = {"temperature", "top_p", "top_k"}
SECRET = b"fake-secret"
GAP_SECONDS = 0.0
REQUESTS = []
CACHE = {}  # key -> entry
LOCK = threading.Lock()

MAGIC_REDACTED = ("ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING_"
                  "46C9A13E193C177646C7398A98432ECCCE4C1253D5E2D82641AC0E52CC2876CB")
INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
MAX_BODY_BYTES = 32 * 1024 * 1024
MAX_BREAKPOINTS = 4
LOOKBACK = 20
TTL_SECONDS = {"5m": 300, "1h": 3600}
IMAGE_TOKENS = 100
DOCUMENT_TOKENS = 100
REDACTED_TOKENS = 16
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
SIG_PREFIX = b"FAKESIG1"
REDACTED_PREFIX = b"FAKERED1"

# id -> (full id, min cacheable prefix, max output tokens, extended thinking)
_MODEL_ROWS = [
    (("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"), 1024, 64000, True),
    (("claude-opus-4-1", "claude-opus-4-1-20250805"), 1024, 32000, True),
    (("claude-sonnet-4-0", "claude-sonnet-4-20250514"), 1024, 64000, True),
    (("claude-opus-4-0", "claude-opus-4-20250514"), 1024, 32000, True),
    (("claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219"), 1024, 64000, True),
    (("claude-haiku-4-5", "claude-haiku-4-5-20251001"), 4096, 64000, True),
    (("claude-3-5-haiku-latest", "claude-3-5-haiku-20241022"), 2048, 8192, False),
]
MODELS = {name: {"id": names[-1], "min_cache": mc, "max_tokens": mt, "thinking": th}
          for names, mc, mt, th in _MODEL_ROWS for name in names}

CREATE_FIELDS = {"model", "messages", "max_tokens", "system", "metadata", "stop_sequences",
                 "stream", "temperature", "top_p", "top_k", "tools", "tool_choice", "thinking",
                 "service_tier", "cache_control"}
COUNT_FIELDS = {"model", "messages", "system", "tools", "tool_choice", "thinking",
                "cache_control"}
NOT_IMPLEMENTED_FIELDS = {"container", "mcp_servers", "context_management", "output_config",
                          "inference_geo", "speed", "diagnostics"}

USER_BLOCKS = {"text", "image", "document", "tool_result", "search_result"}
ASSISTANT_BLOCKS = {"text", "tool_use", "server_tool_use", "web_search_tool_result", "thinking",
                    "redacted_thinking"}
NOT_IMPLEMENTED_BLOCKS = {"container_upload", "code_execution_tool_result",
                          "bash_code_execution_tool_result",
                          "text_editor_code_execution_tool_result", "web_fetch_tool_result",
                          "tool_search_tool_result", "mcp_tool_use", "mcp_tool_result",
                          "compaction", "tool_reference"}
BLOCK_MEMBERS = {
    "text": {"type", "text", "cache_control", "citations"},
    "image": {"type", "source", "cache_control"},
    "document": {"type", "source", "cache_control", "citations", "context", "title"},
    "tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
    "search_result": {"type", "source", "title", "content", "cache_control", "citations"},
    "tool_use": {"type", "id", "name", "input", "cache_control"},
    "server_tool_use": {"type", "id", "name", "input", "cache_control"},
    "web_search_tool_result": {"type", "tool_use_id", "content", "cache_control"},
    "thinking": {"type", "thinking", "signature"},
    "redacted_thinking": {"type", "data"},
}
TOOL_RESULT_CONTENT = {"text", "image", "document", "search_result"}
IMAGE_TYPES = {"image/jpeg": (b"\xff\xd8\xff",), "image/png": (b"\x89PNG\r\n\x1a\n",),
               "image/gif": (b"GIF87a", b"GIF89a"), "image/webp": (b"RIFF",)}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
TOOL_ID_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
CUSTOM_TOOL_MEMBERS = {"name", "description", "input_schema", "cache_control", "type", "strict",
                       "input_examples", "defer_loading", "eager_input_streaming"}
# Anthropic-defined tools this fake takes: type -> (fixed name, members).
DEFINED_TOOLS = {
    "web_search_20250305": ("web_search", {"type", "name", "max_uses", "allowed_domains",
                                           "blocked_domains", "user_location", "cache_control"}),
    "bash_20250124": ("bash", {"type", "name", "cache_control"}),
    "text_editor_20250124": ("str_replace_editor", {"type", "name", "cache_control"}),
    "text_editor_20250429": ("str_replace_based_edit_tool", {"type", "name", "cache_control"}),
    "text_editor_20250728": ("str_replace_based_edit_tool",
                             {"type", "name", "max_characters", "cache_control"}),
}
NOT_IMPLEMENTED_TOOL_PREFIXES = ("web_fetch_", "code_execution_", "memory_", "computer_",
                                 "tool_search_tool_", "web_search_2026")


class ApiError(Exception):
    """An error answer: HTTP status, Anthropic's error type and the message."""

    def __init__(self, status, kind, message):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def invalid(message):
    return ApiError(400, "invalid_request_error", message)


def extra(path):
    return invalid(f"{path}: Extra inputs are not permitted")


def not_implemented(what):
    return invalid(f"{what}: documented by Anthropic but not implemented by this fake "
                   "(tests/python/fake_anthropic.py)")


def new_id(prefix):
    return prefix + "01" + "".join(secrets.choice(BASE62) for _ in range(22))


def words(text):
    return len(text.split()) if isinstance(text, str) else 0


def json_words(value):
    return words(json.dumps(value, sort_keys=True))


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def strip_cache_control(block):
    """The block without its cache_control, nor those of the blocks nested in its content (a
    tool_result's, a search_result's, a document's content source); tool inputs and schemas are
    left as they are."""
    if not isinstance(block, dict):
        return block
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if isinstance(out.get("content"), list):
        out["content"] = [strip_cache_control(b) for b in out["content"]]
    source = out.get("source")
    if isinstance(source, dict) and isinstance(source.get("content"), list):
        out["source"] = dict(source, content=[strip_cache_control(b)
                                              for b in source["content"]])
    return out


# ------------------------------------------------------------------------- signatures

def sign_thinking(text):
    mac = hmac.new(SECRET, b"thinking\x00" + text.encode(), hashlib.sha256).digest()
    return base64.b64encode(SIG_PREFIX + mac).decode()


def thinking_signature_ok(text, signature):
    return isinstance(signature, str) and hmac.compare_digest(
        signature.encode(), sign_thinking(text).encode())


def new_redacted_data():
    nonce = secrets.token_bytes(50)
    mac = hmac.new(SECRET, b"redacted\x00" + nonce, hashlib.sha256).digest()
    return base64.b64encode(REDACTED_PREFIX + nonce + mac).decode()


def redacted_data_ok(data):
    if not isinstance(data, str):
        return False
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    if base64.b64encode(raw).decode() != data or not raw.startswith(REDACTED_PREFIX):
        return False
    body = raw[len(REDACTED_PREFIX):]
    nonce, mac = body[:-32], body[-32:]
    if len(nonce) != 50:
        return False
    expected = hmac.new(SECRET, b"redacted\x00" + nonce, hashlib.sha256).digest()
    return hmac.compare_digest(mac, expected)


# ------------------------------------------------------------------------- validation

def _int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _obj(value, path):
    if not isinstance(value, dict):
        raise invalid(f"{path}: Input should be a valid dictionary")
    return value


def _closed(obj, allowed, path):
    for key in obj:
        if key not in allowed:
            raise extra(f"{path}.{key}")


def _str(value, path, required=True):
    if value is None and not required:
        return None
    if value is None:
        raise invalid(f"{path}: Field required")
    if not isinstance(value, str):
        raise invalid(f"{path}: Input should be a valid string")
    return value


class Prompt:
    """A validated request: its turns, its blocks in cache order and its breakpoints."""

    def __init__(self, model, info, version):
        self.model, self.info, self.version = model, info, version
        # (path, section, role, block, tokens, control) in the order tools, system, messages;
        # control is the block's own cache_control (or a nested one), None when it has none.
        self.positions = []
        self.cache_controls = 0  # every cache_control object, nested ones included
        self.turns = []  # {"role", "index", "blocks": [(path, block)]}
        self.images = []  # (decoded bytes | None, url | None) in conversation order
        self.tool_names = []
        self.custom_tools = []
        self.breakpoints = []  # (position index, ttl, path)

    @property
    def total(self):
        return sum(p[4] for p in self.positions)


def check_cache_control(value, path, prompt):
    _obj(value, path)
    _closed(value, {"type", "ttl"}, path)
    if value.get("type") != "ephemeral":
        raise invalid(f"{path}.type: Input should be 'ephemeral'")
    ttl = value.get("ttl")
    if ttl is not None and ttl not in TTL_SECONDS:
        raise invalid(f"{path}.ttl: Input should be '5m' or '1h'")
    if prompt is not None:
        prompt.cache_controls += 1
    return ttl or "5m"


def _text_block(block, path, prompt, in_messages, role=None):
    _closed(block, BLOCK_MEMBERS["text"], path)
    text = _str(block.get("text"), f"{path}.text")
    if "citations" in block and block["citations"] is not None \
            and not isinstance(block["citations"], list):
        raise invalid(f"{path}.citations: Input should be a valid list")
    if role == "user" and block.get("citations") and prompt.version == "2026-10-21":
        raise invalid(f"{path}.citations: a `text` block in a `user` message cannot carry "
                      "citations in API version 2026-10-21")
    control = None
    if block.get("cache_control") is not None:
        if not text:
            where = f"{path}.text" if in_messages else path
            raise invalid(f"{where}: cache_control cannot be set for empty text blocks")
        control = check_cache_control(block["cache_control"], f"{path}.cache_control", prompt)
    if in_messages:
        if not text:
            raise invalid("messages: text content blocks must be non-empty")
        if not text.strip():
            raise invalid("messages: text content blocks must contain non-whitespace text")
    return words(text), control


def _image_block(block, path, prompt):
    _closed(block, BLOCK_MEMBERS["image"], path)
    source = _obj(block.get("source"), f"{path}.source")
    kind = source.get("type")
    if kind == "base64":
        _closed(source, {"type", "media_type", "data"}, f"{path}.source.base64")
        media = source.get("media_type")
        if media not in IMAGE_TYPES:
            raise invalid(f"{path}.source.base64.media_type: Input should be 'image/jpeg', "
                          "'image/png', 'image/gif' or 'image/webp'")
        data = _str(source.get("data"), f"{path}.source.base64.data")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise invalid(f"{path}.source.base64.data: The image data is not valid base64.")
        if not raw:
            raise invalid(f"{path}.source.base64.data: The image data is empty.")
        if not raw.startswith(IMAGE_TYPES[media]):
            actual = next((m for m, magics in IMAGE_TYPES.items() if raw.startswith(magics)),
                          None)
            shown = f"a {actual} image" if actual else "not a supported image"
            raise invalid(f"{path}.source.base64.data: The image was specified using the "
                          f"{media} media type, but the image appears to be {shown}")
        prompt.images.append((raw, None))
    elif kind == "url":
        _closed(source, {"type", "url"}, f"{path}.source.url")
        url = _str(source.get("url"), f"{path}.source.url.url")
        prompt.images.append((None, url))
    elif kind == "file":
        raise not_implemented(f"{path}.source.file (the Files API)")
    else:
        raise invalid(f"{path}.source: Input tag '{kind}' found using 'type' does not match any "
                      "of the expected tags: 'base64', 'url', 'file'")
    control = None
    if block.get("cache_control") is not None:
        control = check_cache_control(block["cache_control"], f"{path}.cache_control", prompt)
    return IMAGE_TOKENS, control


def _document_block(block, path, prompt):
    _closed(block, BLOCK_MEMBERS["document"], path)
    source = _obj(block.get("source"), f"{path}.source")
    kind = source.get("type")
    tokens, nested = 0, None
    if kind == "base64":
        _closed(source, {"type", "media_type", "data"}, f"{path}.source.base64")
        if source.get("media_type") != "application/pdf":
            raise invalid(f"{path}.source.base64.media_type: Input should be 'application/pdf'")
        data = _str(source.get("data"), f"{path}.source.base64.data")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise invalid(f"{path}.source.base64.data: The PDF data is not valid base64.")
        if not raw.startswith(b"%PDF"):
            raise invalid(f"{path}.source.base64.data: The PDF specified was not valid.")
        tokens = DOCUMENT_TOKENS
    elif kind == "text":
        _closed(source, {"type", "media_type", "data"}, f"{path}.source.text")
        if source.get("media_type") != "text/plain":
            raise invalid(f"{path}.source.text.media_type: Input should be 'text/plain'")
        tokens = words(_str(source.get("data"), f"{path}.source.text.data"))
    elif kind == "content":
        _closed(source, {"type", "content"}, f"{path}.source.content")
        content = source.get("content")
        if isinstance(content, str):
            tokens = words(content)
        elif isinstance(content, list):
            for k, inner in enumerate(content):
                ipath = f"{path}.source.content.{k}"
                _obj(inner, ipath)
                itype = inner.get("type")
                if itype == "text":
                    n, control = _text_block(inner, ipath, prompt, False)
                elif itype == "image":
                    n, control = _image_block(inner, ipath, prompt)
                else:
                    raise invalid(f"{ipath}: Input tag '{itype}' found using 'type' does not "
                                  "match any of the expected tags: 'text', 'image'")
                tokens += n
                nested = nested or control
        else:
            raise invalid(f"{path}.source.content.content: Input should be a valid string or "
                          "list")
    elif kind == "url":
        _closed(source, {"type", "url"}, f"{path}.source.url")
        _str(source.get("url"), f"{path}.source.url.url")
        tokens = DOCUMENT_TOKENS
    elif kind == "file":
        raise not_implemented(f"{path}.source.file (the Files API)")
    else:
        raise invalid(f"{path}.source: Input tag '{kind}' found using 'type' does not match any "
                      "of the expected tags: 'base64', 'text', 'content', 'url', 'file'")
    tokens += words(block.get("title")) + words(block.get("context"))
    control = nested
    if block.get("cache_control") is not None:
        control = check_cache_control(block["cache_control"], f"{path}.cache_control", prompt)
    return tokens, control


def _search_result_block(block, path, prompt):
    _closed(block, BLOCK_MEMBERS["search_result"], path)
    _str(block.get("source"), f"{path}.source")
    title = _str(block.get("title"), f"{path}.title")
    content = block.get("content")
    if not isinstance(content, list):
        raise invalid(f"{path}.content: Input should be a valid list")
    tokens, control = words(title), None
    for k, inner in enumerate(content):
        ipath = f"{path}.content.{k}"
        _obj(inner, ipath)
        if inner.get("type") != "text":
            raise invalid(f"{ipath}.type: Input should be 'text'")
        n, c = _text_block(inner, ipath, prompt, False, role="user")
        tokens += n
        control = control or c
    if block.get("cache_control") is not None:
        control = check_cache_control(block["cache_control"], f"{path}.cache_control", prompt)
    return tokens, control


def _tool_result_block(block, path, prompt):
    _closed(block, BLOCK_MEMBERS["tool_result"], path)
    tid = _str(block.get("tool_use_id"), f"{path}.tool_use_id")
    if not TOOL_ID_RE.match(tid):
        raise invalid(f"{path}.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$'")
    if "is_error" in block and not isinstance(block["is_error"], bool):
        raise invalid(f"{path}.is_error: Input should be a valid boolean")
    content = block.get("content")
    tokens, control = 0, None
    if isinstance(content, str):
        tokens = words(content)
    elif isinstance(content, list):
        for k, inner in enumerate(content):
            ipath = f"{path}.content.{k}"
            _obj(inner, ipath)
            itype = inner.get("type")
            if itype not in TOOL_RESULT_CONTENT:
                raise invalid(f"{ipath}: Input tag '{itype}' found using 'type' does not match "
                              "any of the expected tags: 'text', 'image', 'document', "
                              "'search_result'")
            if itype == "text":
                n, c = _text_block(inner, ipath, prompt, True)
            elif itype == "image":
                n, c = _image_block(inner, ipath, prompt)
            elif itype == "document":
                n, c = _document_block(inner, ipath, prompt)
            else:
                n, c = _search_result_block(inner, ipath, prompt)
            tokens += n
            control = control or c
    elif content is not None:
        raise invalid(f"{path}.content: Input should be a valid string or list")
    if block.get("cache_control") is not None:
        control = check_cache_control(block["cache_control"], f"{path}.cache_control", prompt)
    return tokens, control


def _tool_use_block(block, path, prompt, kind):
    _closed(block, BLOCK_MEMBERS[kind], path)
    tid = _str(block.get("id"), f"{path}.id")
    if not TOOL_ID_RE.match(tid):
        raise invalid(f"{path}.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
    name = _str(block.get("name"), f"{path}.name")
    if not name:
        raise invalid(f"{path}.name: String should have at least 1 character")
    if "input" not in block:
        raise invalid(f"{path}.input: Field required")
    if not isinstance(block["input"], dict):
        raise invalid(f"{path}.input: Input should be a valid dictionary")
    control = None
    if block.get("cache_control") is not None:
        control = check_cache_control(block["cache_control"], f"{path}.cache_control", prompt)
    return words(name) + json_words(block["input"]), control


def _web_search_result_block(block, path, prompt):
    _closed(block, BLOCK_MEMBERS["web_search_tool_result"], path)
    _str(block.get("tool_use_id"), f"{path}.tool_use_id")
    content = block.get("content")
    if isinstance(content, list):
        for k, item in enumerate(content):
            ipath = f"{path}.content.{k}"
            _obj(item, ipath)
            if item.get("type") != "web_search_result":
                raise invalid(f"{ipath}.type: Input should be 'web_search_result'")
            _closed(item, {"type", "url", "title", "encrypted_content", "page_age"}, ipath)
            for member in ("url", "title", "encrypted_content"):
                _str(item.get(member), f"{ipath}.{member}")
    elif isinstance(content, dict):
        if content.get("type") != "web_search_tool_result_error":
            raise invalid(f"{path}.content.type: Input should be 'web_search_tool_result_error'")
        _closed(content, {"type", "error_code"}, f"{path}.content")
    else:
        raise invalid(f"{path}.content: Input should be a valid list or dictionary")
    control = None
    if block.get("cache_control") is not None:
        control = check_cache_control(block["cache_control"], f"{path}.cache_control", prompt)
    return json_words(content), control


def _thinking_block(block, path):
    _closed(block, BLOCK_MEMBERS["thinking"], path)
    text = _str(block.get("thinking"), f"{path}.thinking.thinking")
    if "signature" not in block:
        raise invalid(f"{path}.thinking.signature: Field required")
    if not thinking_signature_ok(text, block["signature"]):
        raise invalid(f"{path}: Invalid `signature` in `thinking` block")
    return words(text), None


def _redacted_block(block, path):
    _closed(block, BLOCK_MEMBERS["redacted_thinking"], path)
    if "data" not in block:
        raise invalid(f"{path}.redacted_thinking.data: Field required")
    if not redacted_data_ok(block["data"]):
        raise invalid(f"{path}: Invalid `data` in `redacted_thinking` block")
    return REDACTED_TOKENS, None


def check_block(block, path, role, prompt):
    """Validate one message content block; (tokens, cache_control ttl or None)."""
    _obj(block, path)
    kind = block.get("type")
    if kind in NOT_IMPLEMENTED_BLOCKS:
        raise not_implemented(f"{path}: `{kind}` blocks")
    if kind not in BLOCK_MEMBERS:
        expected = ", ".join(f"'{t}'" for t in sorted(BLOCK_MEMBERS))
        raise invalid(f"{path}: Input tag '{kind}' found using 'type' does not match any of the "
                      f"expected tags: {expected}")
    allowed = USER_BLOCKS if role == "user" else ASSISTANT_BLOCKS
    if role == "assistant" and kind == "document":
        if prompt.version != "2023-06-01":
            raise invalid(f"{path}: `document` blocks are not allowed in `assistant` messages in "
                          "API version 2026-10-21")
        allowed = allowed | {"document"}
    if kind not in allowed:
        raise invalid(f"{path}: `{kind}` blocks are not allowed in `{role}` messages")
    if kind in ("thinking", "redacted_thinking") and "cache_control" in block:
        raise extra(f"{path}.{kind}.cache_control")
    if kind == "text":
        return _text_block(block, path, prompt, True, role)
    if kind == "image":
        return _image_block(block, path, prompt)
    if kind == "document":
        return _document_block(block, path, prompt)
    if kind == "search_result":
        return _search_result_block(block, path, prompt)
    if kind == "tool_result":
        return _tool_result_block(block, path, prompt)
    if kind in ("tool_use", "server_tool_use"):
        return _tool_use_block(block, path, prompt, kind)
    if kind == "web_search_tool_result":
        return _web_search_result_block(block, path, prompt)
    if kind == "thinking":
        return _thinking_block(block, path)
    return _redacted_block(block, path)


def check_tools(tools, prompt):
    if tools is None:
        return
    if not isinstance(tools, list):
        raise invalid("tools: Input should be a valid list")
    names = set()
    for k, tool in enumerate(tools):
        path = f"tools.{k}"
        _obj(tool, path)
        kind = tool.get("type")
        control = None
        if kind is None or kind == "custom":
            _closed(tool, CUSTOM_TOOL_MEMBERS, f"{path}.custom")
            name = _str(tool.get("name"), f"{path}.custom.name")
            if not TOOL_NAME_RE.match(name):
                raise invalid(f"{path}.custom.name: String should match pattern "
                              "'^[a-zA-Z0-9_-]{1,128}$'")
            if "description" in tool:
                _str(tool["description"], f"{path}.custom.description")
            schema = tool.get("input_schema")
            if schema is None:
                raise invalid(f"{path}.custom.input_schema: Field required")
            _obj(schema, f"{path}.custom.input_schema")
            if schema.get("type") != "object":
                raise invalid(f"{path}.custom.input_schema.type: Input should be 'object'")
            tokens = words(name) + words(tool.get("description")) + json_words(schema)
            prompt.custom_tools.append(tool)
            if tool.get("cache_control") is not None:
                control = check_cache_control(tool["cache_control"],
                                              f"{path}.custom.cache_control", prompt)
        elif kind in DEFINED_TOOLS:
            fixed, members = DEFINED_TOOLS[kind]
            _closed(tool, members, f"{path}.{kind}")
            name = tool.get("name")
            if name != fixed:
                raise invalid(f"{path}.{kind}.name: Input should be '{fixed}'")
            if kind == "web_search_20250305":
                if "max_uses" in tool and (not _int(tool["max_uses"]) or tool["max_uses"] < 1):
                    raise invalid(f"{path}.{kind}.max_uses: Input should be greater than 0")
                if tool.get("allowed_domains") and tool.get("blocked_domains"):
                    raise invalid(f"{path}.{kind}: Cannot specify both allowed_domains and "
                                  "blocked_domains")
            tokens = json_words(strip_cache_control(tool))
            if tool.get("cache_control") is not None:
                control = check_cache_control(tool["cache_control"],
                                              f"{path}.{kind}.cache_control", prompt)
        elif isinstance(kind, str) and kind.startswith(NOT_IMPLEMENTED_TOOL_PREFIXES):
            raise not_implemented(f"{path}: tools of type '{kind}'")
        else:
            raise invalid(f"{path}: Input tag '{kind}' found using 'type' does not match any of "
                          "the expected tags: 'custom', " +
                          ", ".join(f"'{t}'" for t in DEFINED_TOOLS))
        if name in names:
            raise invalid("tools: Tool names must be unique.")
        names.add(name)
        prompt.tool_names.append(name)
        prompt.positions.append((path, "tools", None, strip_cache_control(tool), tokens,
                                 control))


def check_system(system, prompt):
    if system is None:
        return
    if isinstance(system, str):
        prompt.positions.append(("system", "system", None, {"type": "text", "text": system},
                                 words(system), None))
        return
    if not isinstance(system, list):
        raise invalid("system: Input should be a valid string or list")
    for k, block in enumerate(system):
        path = f"system.{k}"
        _obj(block, path)
        if block.get("type") != "text":
            raise invalid(f"{path}.type: Input should be 'text'")
        tokens, control = _text_block(block, path, prompt, False)
        prompt.positions.append((path, "system", None, strip_cache_control(block), tokens,
                                 control))


def check_messages(messages, prompt):
    if messages is None:
        raise invalid("messages: Field required")
    if not isinstance(messages, list):
        raise invalid("messages: Input should be a valid list")
    if not messages:
        raise invalid("messages: List should have at least 1 item after validation, not 0")
    last = len(messages) - 1
    for i, message in enumerate(messages):
        path = f"messages.{i}"
        _obj(message, path)
        _closed(message, {"role", "content"}, path)
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise invalid(f"{path}.role: Input should be 'user' or 'assistant'")
        if "content" not in message:
            raise invalid(f"{path}.content: Field required")
        content = message["content"]
        if isinstance(content, str):
            blocks = [(f"{path}.content", {"type": "text", "text": content})]
            if content and not content.strip() and not (i == last and role == "assistant"):
                raise invalid("messages: text content blocks must contain non-whitespace text")
        elif isinstance(content, list):
            blocks = [(f"{path}.content.{j}", b) for j, b in enumerate(content)]
        else:
            raise invalid(f"{path}.content: Input should be a valid string or list")
        if not content and not (i == last and role == "assistant"):
            raise invalid(f"{path}: all messages must have non-empty content except for the "
                          "optional final assistant message")
        if prompt.turns and prompt.turns[-1]["role"] == role:
            turn = prompt.turns[-1]
        else:
            turn = {"role": role, "index": i, "blocks": []}
            prompt.turns.append(turn)
        for bpath, block in blocks:
            if isinstance(content, str):
                tokens, control = words(content), None
            else:
                tokens, control = check_block(block, bpath, role, prompt)
            turn["blocks"].append((bpath, block))
            prompt.positions.append((bpath, "messages", role, strip_cache_control(block),
                                     tokens, control))
        if i == last and role == "assistant" and content:
            tail = blocks[-1][1]
            if tail.get("type") == "text" and tail.get("text", "") != \
                    tail.get("text", "").rstrip():
                raise invalid("messages: final assistant content cannot end with trailing "
                              "whitespace")
    if prompt.turns[0]["role"] != "user":
        raise invalid('messages: first message must use the "user" role')


def check_conversation(prompt, tools_given):
    """The API's rules across turns: tool_use / tool_result pairing and unique ids."""
    uses_tools = any(b.get("type") in ("tool_use", "tool_result")
                     for turn in prompt.turns for _, b in turn["blocks"])
    if uses_tools and not tools_given:
        raise invalid("Requests which include `tool_use` or `tool_result` blocks must define "
                      "tools.")
    seen_ids = set()
    previous_uses = []  # (id, path of the assistant turn) of the turn just before
    for t, turn in enumerate(prompt.turns):
        uses, results = [], []
        for path, block in turn["blocks"]:
            kind = block.get("type")
            if kind in ("tool_use", "server_tool_use"):
                if block["id"] in seen_ids:
                    raise invalid(f"{path}: `tool_use` ids must be unique")
                seen_ids.add(block["id"])
                if kind == "tool_use":
                    uses.append(block["id"])
            elif kind == "tool_result":
                results.append((path, block["tool_use_id"]))
        if turn["role"] == "user" and results:
            asked = {tid for tid, _ in previous_uses}
            for path, tid in results:
                if tid not in asked:
                    raise invalid(f"{path}: unexpected `tool_use_id` found in `tool_result` "
                                  f"blocks: {tid}. Each `tool_result` block must have a "
                                  "corresponding `tool_use` block in the previous message.")
        if previous_uses:
            answered = {tid for _, tid in results} if turn["role"] == "user" else set()
            missing = [tid for tid, _ in previous_uses if tid not in answered]
            if missing:
                where = previous_uses[0][1]
                raise invalid(f"{where}: `tool_use` ids were found without `tool_result` blocks "
                              f"immediately after: {', '.join(missing)}. Each `tool_use` block "
                              "must have a corresponding `tool_result` block in the next "
                              "message.")
        previous_uses = [(tid, f"messages.{turn['index']}") for tid in uses] \
            if turn["role"] == "assistant" else []


def check_tool_choice(choice, prompt, tools_given):
    if choice is None:
        return None
    _obj(choice, "tool_choice")
    kind = choice.get("type")
    if kind not in ("auto", "any", "tool", "none"):
        raise invalid(f"tool_choice: Input tag '{kind}' found using 'type' does not match any of "
                      "the expected tags: 'auto', 'any', 'tool', 'none'")
    allowed = {"type", "disable_parallel_tool_use"} if kind != "none" else {"type"}
    if kind == "tool":
        allowed = allowed | {"name"}
    _closed(choice, allowed, f"tool_choice.{kind}")
    if "disable_parallel_tool_use" in choice \
            and not isinstance(choice["disable_parallel_tool_use"], bool):
        raise invalid(f"tool_choice.{kind}.disable_parallel_tool_use: Input should be a valid "
                      "boolean")
    if not tools_given:
        raise invalid(f"tool_choice.{kind} may only be specified while providing tools")
    if kind == "tool":
        name = _str(choice.get("name"), "tool_choice.tool.name")
        if name not in prompt.tool_names:
            raise invalid(f"tool_choice.tool.name: Tool '{name}' not found in the provided "
                          "tools")
    return kind


def check_thinking(thinking, info, model):
    if thinking is None:
        return None
    _obj(thinking, "thinking")
    kind = thinking.get("type")
    if kind == "disabled":
        _closed(thinking, {"type"}, "thinking.disabled")
        return None
    if kind == "adaptive":
        raise invalid(f"thinking.type: adaptive thinking is not supported on {model}; use "
                      "`enabled` with `budget_tokens`")
    if kind != "enabled":
        raise invalid(f"thinking: Input tag '{kind}' found using 'type' does not match any of the "
                      "expected tags: 'adaptive', 'disabled', 'enabled'")
    _closed(thinking, {"type", "budget_tokens", "display"}, "thinking.enabled")
    budget = thinking.get("budget_tokens")
    if budget is None:
        raise invalid("thinking.enabled.budget_tokens: Field required")
    if not _int(budget):
        raise invalid("thinking.enabled.budget_tokens: Input should be a valid integer")
    if budget < 1024:
        raise invalid("thinking.enabled.budget_tokens: Input should be greater than or equal "
                      "to 1024")
    display = thinking.get("display")
    if display is not None and display not in ("summarized", "omitted"):
        raise invalid("thinking.enabled.display: Input should be 'summarized' or 'omitted'")
    if not info["thinking"]:
        raise invalid(f"'{model}' does not support extended thinking.")
    return thinking


def check_breakpoints(body, prompt):
    """The cache_control rules that span the request; fills prompt.breakpoints."""
    points = [(i, p[5], p[0]) for i, p in enumerate(prompt.positions) if p[5] is not None]
    top = body.get("cache_control")
    count = prompt.cache_controls
    if top is not None:
        ttl = check_cache_control(top, "cache_control", None)
        target = None
        for i in range(len(prompt.positions) - 1, -1, -1):
            block = prompt.positions[i][3]
            if block.get("type") in ("thinking", "redacted_thinking"):
                continue
            if block.get("type") == "text" and not block.get("text"):
                continue
            target = i
            break
        if target is not None:
            own = next((p for p in points if p[0] == target), None)
            if own is not None and own[1] != ttl:
                raise invalid(f"cache_control: the automatic cache_control (ttl '{ttl}') "
                              f"targets {own[2]}, which already has a cache_control with ttl "
                              f"'{own[1]}'")
            if own is None:
                count += 1
                points.append((target, ttl, "cache_control"))
                points.sort()
    if count > MAX_BREAKPOINTS:
        raise invalid(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be "
                      f"provided. Found {count}.")
    short_seen = False
    for _, ttl, path in points:
        if ttl == "5m":
            short_seen = True
        elif short_seen:
            raise invalid(f"{path}.cache_control.ttl: a ttl='1h' cache_control block must not "
                          "come after a ttl='5m' cache_control block. Blocks are processed in "
                          "the following order: `tools`, `system`, `messages`."
                          if path != "cache_control" else
                          "cache_control.ttl: a ttl='1h' cache_control block must not come "
                          "after a ttl='5m' cache_control block. Blocks are processed in the "
                          "following order: `tools`, `system`, `messages`.")
    prompt.breakpoints = points


def check_request(body, operation, beta, version):
    """Validate a create or count_tokens body; (prompt, thinking config or None)."""
    if not isinstance(body, dict):
        raise invalid("The request body must be a JSON object.")
    allowed = CREATE_FIELDS if operation == "create" else COUNT_FIELDS
    if version != "2023-06-01":
        allowed = allowed - SAMPLING_FIELDS
    for key in body:
        if key not in allowed:
            if key in NOT_IMPLEMENTED_FIELDS:
                raise not_implemented(key)
            raise extra(key)
    model = _str(body.get("model"), "model")
    if operation == "create":
        if "max_tokens" not in body:
            raise invalid("max_tokens: Field required")
        max_tokens = body["max_tokens"]
        if not _int(max_tokens):
            raise invalid("max_tokens: Input should be a valid integer")
        if max_tokens < 0:
            raise invalid("max_tokens: Input should be greater than or equal to 0")
    if "messages" not in body:
        raise invalid("messages: Field required")
    if model not in MODELS:
        raise ApiError(404, "not_found_error", f"model: {model}")
    info = MODELS[model]
    prompt = Prompt(model, info, version)
    check_tools(body.get("tools"), prompt)
    check_system(body.get("system"), prompt)
    check_messages(body.get("messages"), prompt)
    tools_given = bool(body.get("tools"))
    check_conversation(prompt, tools_given)
    choice = check_tool_choice(body.get("tool_choice"), prompt, tools_given)
    thinking = check_thinking(body.get("thinking"), info, model)
    check_breakpoints(body, prompt)
    if operation == "create":
        check_sampling(body, info, model, thinking, choice, prompt, beta)
    return prompt, thinking


def check_sampling(body, info, model, thinking, choice, prompt, beta):
    max_tokens = body["max_tokens"]
    if max_tokens > info["max_tokens"]:
        raise invalid(f"max_tokens: {max_tokens} > {info['max_tokens']}, which is the maximum "
                      f"allowed number of output tokens for {info['id']}")
    for name in ("temperature", "top_p"):
        if name in body and body[name] is not None:
            value = body[name]
            if not _number(value):
                raise invalid(f"{name}: Input should be a valid number")
            if value < 0:
                raise invalid(f"{name}: Input should be greater than or equal to 0")
            if value > 1:
                raise invalid(f"{name}: Input should be less than or equal to 1")
    if body.get("top_k") is not None:
        if not _int(body["top_k"]):
            raise invalid("top_k: Input should be a valid integer")
        if body["top_k"] < 0:
            raise invalid("top_k: Input should be greater than or equal to 0")
    stops = body.get("stop_sequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise invalid("stop_sequences: Input should be a valid list of strings")
        for k, s in enumerate(stops):
            if not s.strip():
                raise invalid(f"stop_sequences.{k}: stop sequences must contain non-whitespace "
                              "text")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise invalid("stream: Input should be a valid boolean")
    metadata = body.get("metadata")
    if metadata is not None:
        _obj(metadata, "metadata")
        _closed(metadata, {"user_id"}, "metadata")
        user = metadata.get("user_id")
        if user is not None:
            _str(user, "metadata.user_id")
            if len(user) > 256:
                raise invalid("metadata.user_id: String should have at most 256 characters")
    tier = body.get("service_tier")
    if tier is not None and tier not in ("auto", "standard_only"):
        raise invalid("service_tier: Input should be 'auto' or 'standard_only'")
    if thinking is None:
        return
    budget = thinking["budget_tokens"]
    if budget >= max_tokens and INTERLEAVED_BETA not in beta:
        raise invalid("`max_tokens` must be greater than `thinking.budget_tokens`. Please "
                      "consult our documentation at https://docs.claude.com/en/docs/"
                      "build-with-claude/extended-thinking#max-tokens-and-context-window-size")
    if body.get("temperature") is not None and body["temperature"] != 1:
        raise invalid("`temperature` may only be set to 1 when thinking is enabled. Please "
                      "consult our documentation at https://docs.claude.com/en/docs/"
                      "build-with-claude/extended-thinking#important-considerations-when-"
                      "using-extended-thinking")
    if body.get("top_p") is not None and body["top_p"] < 0.95:
        raise invalid("`top_p` must be greater than or equal to 0.95 or unset when thinking is "
                      "enabled.")
    if body.get("top_k") is not None:
        raise invalid("`top_k` must be unset when thinking is enabled.")
    if choice in ("any", "tool"):
        raise invalid("Thinking may not be enabled when tool_choice forces tool use.")
    turns = prompt.turns
    if turns[-1]["role"] == "assistant":
        raise invalid("messages: a final `assistant` message (a prefill) is not supported when "
                      "thinking is enabled.")
    last = turns[-1]
    if len(turns) >= 2 and any(b.get("type") == "tool_result" for _, b in last["blocks"]):
        previous = turns[-2]
        path, first = previous["blocks"][0]
        if first.get("type") not in ("thinking", "redacted_thinking"):
            raise invalid(f"{path}.type: Expected `thinking` or `redacted_thinking`, but found "
                          f"`{first.get('type')}`. When `thinking` is enabled, a final "
                          "`assistant` message must start with a thinking block (preceeding "
                          "the lastmost set of `tool_use` and `tool_result` blocks). We "
                          "recommend you include thinking blocks from previous turns. To avoid "
                          "this requirement, disable `thinking`.")


# ------------------------------------------------------------------------- prompt cache

def prefix_keys(prompt, body):
    """The chained key and the cumulative token count at every block boundary."""
    digest = hashlib.sha256(canonical({"model": prompt.model}).encode()).digest()
    keys, totals, total, mixed = [], [], 0, False
    choice = body.get("tool_choice")
    thinking = body.get("thinking")
    context = {
        "tool_choice": None if not choice or choice == {"type": "auto"} else choice,
        "thinking": thinking if isinstance(thinking, dict)
        and thinking.get("type") == "enabled" else None,
    }
    for path, section, role, block, tokens, _control in prompt.positions:
        if section == "messages" and not mixed:
            digest = hashlib.sha256(digest + canonical(context).encode()).digest()
            mixed = True
        item = {"section": section, "role": role, "block": block}
        digest = hashlib.sha256(digest + canonical(item).encode()).digest()
        total += tokens
        keys.append(digest.hex())
        totals.append(total)
    return keys, totals


def account_cache(prompt, body, write):
    """Usage's input and cache fields for the prompt (writing entries when `write`)."""
    total = prompt.total
    empty = {"input_tokens": total, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0,
             "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}}
    if not prompt.breakpoints:
        return empty
    keys, totals = prefix_keys(prompt, body)
    minimum = prompt.info["min_cache"]
    now = time.monotonic()
    with LOCK:
        for key in [k for k, e in CACHE.items() if e["expires_at"] <= now]:
            del CACHE[key]
        hit_at, hit_key = 0, None
        for index, _ttl, _path in prompt.breakpoints:
            for p in range(index, max(index - LOOKBACK, -1), -1):
                if totals[p] < minimum:
                    break
                if keys[p] in CACHE:
                    if totals[p] > hit_at:
                        hit_at, hit_key = totals[p], keys[p]
                    break
        cacheable = [(i, ttl, path) for i, ttl, path in prompt.breakpoints
                     if totals[i] >= minimum]
        a = hit_at
        long_ones = [totals[i] for i, ttl, _ in cacheable if ttl == "1h" and totals[i] > a]
        b = max(long_ones) if long_ones else a
        c = max([totals[cacheable[-1][0]], a]) if cacheable else a
        if write:
            if hit_key is not None:
                entry = CACHE[hit_key]
                entry["hits"] += 1
                entry["expires_at"] = now + TTL_SECONDS[entry["ttl"]]
            for i, ttl, path in cacheable:
                entry = CACHE.get(keys[i])
                if entry is None:
                    CACHE[keys[i]] = {"key": keys[i], "model": prompt.model,
                                      "tokens": totals[i], "ttl": ttl, "end": path, "hits": 0,
                                      "expires_at": now + TTL_SECONDS[ttl]}
                else:
                    if TTL_SECONDS[ttl] > TTL_SECONDS[entry["ttl"]]:
                        entry["ttl"] = ttl
                    entry["expires_at"] = max(entry["expires_at"],
                                              now + TTL_SECONDS[entry["ttl"]])
    return {"input_tokens": total - c, "cache_creation_input_tokens": c - a,
            "cache_read_input_tokens": a,
            "cache_creation": {"ephemeral_5m_input_tokens": c - b,
                               "ephemeral_1h_input_tokens": b - a}}


def cache_snapshot():
    now = time.monotonic()
    with LOCK:
        return [{"key": e["key"], "model": e["model"], "tokens": e["tokens"], "ttl": e["ttl"],
                 "end": e["end"], "hits": e["hits"],
                 "expires_in_s": round(e["expires_at"] - now, 3)}
                for e in CACHE.values() if e["expires_at"] > now]


# ------------------------------------------------------------------------------- answers

def _turn_text(turn):
    return " ".join(b.get("text", "") for _, b in turn["blocks"] if b.get("type") == "text")


def _result_text(block):
    content = block.get("content")
    if isinstance(content, str):
        return content
    return " ".join(c.get("text", "") for c in content or [] if c.get("type") == "text")


def _tool_input(tool, city):
    schema = tool.get("input_schema") or {}
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) \
        else list(props)
    value, city_used = {}, False
    for name in required:
        spec = props.get(name)
        spec = spec if isinstance(spec, dict) else {}
        kind = spec.get("type")
        if isinstance(spec.get("enum"), list) and spec["enum"]:
            value[name] = spec["enum"][0]
        elif kind == "string":
            value[name] = city if not city_used else "fake"
            city_used = True
        elif kind in ("number", "integer"):
            value[name] = 1
        elif kind == "boolean":
            value[name] = True
        elif kind == "array":
            value[name] = []
        elif kind == "object":
            value[name] = {}
        else:
            value[name] = city if not city_used else "fake"
            city_used = True
    return value


def block_tokens(block):
    kind = block["type"]
    if kind == "text":
        return words(block["text"])
    if kind == "thinking":
        return words(block["thinking"])
    if kind == "redacted_thinking":
        return REDACTED_TOKENS
    return words(block["name"]) + json_words(block["input"])


def answer(body, prompt, thinking):
    """(content blocks, stop_reason, stop_sequence) for a valid create request."""
    if body["max_tokens"] == 0:
        return [], "max_tokens", None
    turns = prompt.turns
    last = turns[-1]
    blocks = []
    last_user = last if last["role"] == "user" else (turns[-2] if len(turns) > 1 else last)
    user_text = _turn_text(last_user)
    has_results = last["role"] == "user" and any(
        b.get("type") == "tool_result" for _, b in last["blocks"])
    if thinking is not None:
        head = " ".join(user_text.split()[:8]) if not has_results else "the tool results"
        text = "" if thinking.get("display") == "omitted" else f"Thinking about: {head or 'it'}"
        blocks.append({"type": "thinking", "thinking": text, "signature": sign_thinking(text)})
        if MAGIC_REDACTED in user_text:
            blocks.append({"type": "redacted_thinking", "data": new_redacted_data()})
    choice = body.get("tool_choice") or {"type": "auto"}
    custom = prompt.custom_tools
    if (last["role"] == "user" and not has_results and custom and choice["type"] != "none"
            and (choice["type"] in ("any", "tool") or "weather" in user_text.lower())):
        if choice["type"] == "tool":
            tool = next(t for t in custom if t["name"] == choice["name"])
        else:
            tool = next((t for t in custom if t["name"] == "get_weather"), custom[0])
        cities = ["Paris", "Tokyo"]
        if "weather" not in tool["name"].lower() or choice.get("disable_parallel_tool_use"):
            cities = cities[:1]
        for city in cities:
            blocks.append({"type": "tool_use", "id": new_id("toolu_"), "name": tool["name"],
                           "input": _tool_input(tool, city)})
        return blocks, "tool_use", None
    if has_results:
        results = [b for turn in turns for _, b in turn["blocks"]
                   if b.get("type") == "tool_result"]
        text = "Weather: " + "; ".join(_result_text(r) for r in results)
    elif prompt.images:
        data, url = prompt.images[0]
        if data is None:
            text = f"image url {url}"
        else:
            png = "true" if data.startswith(PNG_MAGIC) else "false"
            text = f"image {len(data)} bytes png={png}"
    else:
        text = "Hello from the fake upstream."
    stop, matched = "end_turn", None
    found = [(text.find(s), s) for s in body.get("stop_sequences") or [] if s in text]
    if found:
        at, matched = min(found)
        text, stop = text[:at], "stop_sequence"
    limit = body["max_tokens"]
    parts = text.split(" ") if text else []
    if len(parts) > limit:
        text, stop, matched = " ".join(parts[:limit]), "max_tokens", None
    if text:
        blocks.append({"type": "text", "text": text})
    return blocks, stop, matched


# ----------------------------------------------------------------------------------- server

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-anthropic"

    def log_message(self, *args):  # quiet: the test output is what matters
        pass

    def _send(self, status, value, request_id):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", request_id)
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, error, request_id, record=None):
        if record is not None:
            with LOCK:
                record["status"], record["error"] = error.status, error.message
        self._send(error.status, {"type": "error",
                                  "error": {"type": error.kind, "message": error.message},
                                  "request_id": request_id}, request_id)

    def _read_body(self):
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        path = urlsplit(self.path).path
        request_id = new_id("req_")
        if path == "/_fake/requests":
            with LOCK:
                self._send(200, REQUESTS, request_id)
        elif path == "/_fake/cache":
            self._send(200, cache_snapshot(), request_id)
        elif path in ("/v1/messages", "/v1/messages/count_tokens"):
            self._refuse(ApiError(405, "invalid_request_error",
                                  f"Method Not Allowed: GET {path}"), request_id)
        else:
            self._refuse(ApiError(404, "not_found_error", "Not Found"), request_id)

    def do_POST(self):
        request_id = new_id("req_")
        try:
            self._post(request_id)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as error:  # a bug of the fake: say so rather than drop the connection
            self.close_connection = True
            self._refuse(ApiError(500, "api_error", f"fake_anthropic.py failed: {error!r}"),
                         request_id)

    def _post(self, request_id):
        path = urlsplit(self.path).path
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._refuse(ApiError(413, "request_too_large", "Request exceeds the maximum "
                                  "allowed number of bytes."), request_id)
            return
        raw = self._read_body()
        if path == "/_fake/reset":
            try:
                options = json.loads(raw) if raw else {}
            except ValueError:
                options = {}
            with LOCK:
                if options.get("requests", True):
                    REQUESTS.clear()
                if options.get("cache", True):
                    CACHE.clear()
            self._send(200, {"reset": True}, request_id)
            return
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            self._refuse(ApiError(404, "not_found_error", "Not Found"), request_id)
            return
        operation = "create" if path == "/v1/messages" else "count_tokens"
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        beta_header = headers.get("anthropic-beta")
        beta = [b.strip() for b in beta_header.split(",") if b.strip()] if beta_header else None
        bearer = headers.get("authorization") or ""
        bearer = bearer[7:].strip() if bearer[:7].lower() == "bearer " else None
        key = headers.get("x-api-key") or bearer
        record = {"path": path, "method": "POST", "request_id": request_id,
                  "headers": {"x-api-key": "x-api-key" in headers,
                              "authorization-bearer": bearer is not None,
                              "x-api-key-valid": key == API_KEY,
                              "anthropic-version": headers.get("anthropic-version"),
                              "anthropic-beta": beta,
                              "content-type": headers.get("content-type")},
                  "body": body, "status": None, "error": None}
        with LOCK:
            REQUESTS.append(record)
        try:
            if not key:
                raise ApiError(401, "authentication_error", "x-api-key header is required")
            if key != API_KEY:
                raise ApiError(401, "authentication_error", "invalid x-api-key")
            version = headers.get("anthropic-version")
            if not version:
                raise invalid("anthropic-version: header is required")
            if version not in API_VERSIONS:
                raise invalid(f"anthropic-version: '{version}' is not a valid version (this fake "
                              f"knows {' and '.join(API_VERSIONS)})")
            if raw and body is None:
                raise invalid("There was an error parsing the body of your request: it is not "
                              "valid JSON.")
            if body is None:
                raise invalid("The request body must be a JSON object.")
            prompt, thinking = check_request(body, operation, beta or [], version)
        except ApiError as error:
            self._refuse(error, request_id, record)
            return
        with LOCK:
            record["status"] = 200
        if operation == "count_tokens":
            self._send(200, {"input_tokens": prompt.total}, request_id)
            return
        usage = account_cache(prompt, body, write=True)
        blocks, stop, matched = answer(body, prompt, thinking)
        usage["output_tokens"] = sum(block_tokens(b) for b in blocks)
        usage["service_tier"] = "standard"
        message = {"id": new_id("msg_"), "type": "message", "role": "assistant",
                   "model": body["model"], "content": blocks, "stop_reason": stop,
                   "stop_sequence": matched, "usage": usage}
        if body.get("stream"):
            self._stream(message, request_id)
        else:
            self._send(200, message, request_id)

    def _stream(self, message, request_id):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", request_id)
        self.end_headers()
        sent = [0]

        def send(payload):
            if sent[0] and GAP_SECONDS:
                time.sleep(GAP_SECONDS)
            event = f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()
            self.wfile.write(b"%x\r\n" % len(event) + event + b"\r\n")
            self.wfile.flush()
            sent[0] += 1

        usage = message["usage"]
        start = dict(message, content=[], stop_reason=None, stop_sequence=None,
                     usage=dict(usage, output_tokens=1))
        try:
            send({"type": "message_start", "message": start})
            send({"type": "ping"})
            for index, block in enumerate(message["content"]):
                kind = block["type"]
                if kind == "text":
                    send({"type": "content_block_start", "index": index,
                          "content_block": {"type": "text", "text": ""}})
                    for i, word in enumerate(block["text"].split(" ")):
                        send({"type": "content_block_delta", "index": index,
                              "delta": {"type": "text_delta",
                                        "text": word if i == 0 else " " + word}})
                elif kind == "tool_use":
                    send({"type": "content_block_start", "index": index,
                          "content_block": {"type": "tool_use", "id": block["id"],
                                            "name": block["name"], "input": {}}})
                    args = json.dumps(block["input"])
                    third = max(1, len(args) // 3)
                    pieces = ["", args[:third], args[third:2 * third], args[2 * third:]]
                    for piece in pieces:
                        send({"type": "content_block_delta", "index": index,
                              "delta": {"type": "input_json_delta", "partial_json": piece}})
                elif kind == "thinking":
                    send({"type": "content_block_start", "index": index,
                          "content_block": {"type": "thinking", "thinking": "",
                                            "signature": ""}})
                    text = block["thinking"]
                    if text:
                        half = len(text) // 2
                        for piece in (text[:half], text[half:]):
                            send({"type": "content_block_delta", "index": index,
                                  "delta": {"type": "thinking_delta", "thinking": piece}})
                    send({"type": "content_block_delta", "index": index,
                          "delta": {"type": "signature_delta",
                                    "signature": block["signature"]}})
                else:  # redacted_thinking: the whole block in its start
                    send({"type": "content_block_start", "index": index,
                          "content_block": block})
                send({"type": "content_block_stop", "index": index})
            send({"type": "message_delta",
                  "delta": {"stop_reason": message["stop_reason"],
                            "stop_sequence": message["stop_sequence"]},
                  "usage": {"input_tokens": usage["input_tokens"],
                            "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
                            "cache_read_input_tokens": usage["cache_read_input_tokens"],
                            "output_tokens": usage["output_tokens"]}})
            send({"type": "message_stop"})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the reader went away: stop generating


def serve(port=0):
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


# -------------------------------------------------------------------------------- self-test

def _raw(url, path, body, headers=None, method="POST"):
    import urllib.error
    import urllib.request
    data = None if body is None else (body if isinstance(body, bytes) else
                                      json.dumps(body).encode())
    base = {"content-type": "application/json", "x-api-key": API_KEY,
            "anthropic-version": API_VERSIONS[0]}
    base.update(headers or {})
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={k: v for k, v in base.items() if v is not None})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def _expect_error(url, path, body, status, needle, headers=None):
    code, hdrs, text = _raw(url, path, body, headers)
    assert code == status, (code, text, body)
    payload = json.loads(text)
    assert payload["type"] == "error" and payload["request_id"].startswith("req_"), payload
    assert hdrs.get("request-id", "").startswith("req_"), hdrs
    assert needle in payload["error"]["message"], (needle, payload)
    return payload


def _raw_checks(url):
    user = [{"role": "user", "content": "Hi"}]
    base = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": user}
    _expect_error(url, "/v1/messages", base, 401, "x-api-key header is required",
                  {"x-api-key": None})
    _expect_error(url, "/v1/messages", base, 401, "invalid x-api-key", {"x-api-key": "nope"})
    _expect_error(url, "/v1/messages", base, 400, "anthropic-version",
                  {"anthropic-version": None})
    _expect_error(url, "/v1/messages", dict(base, model="claude-nope"), 404, "model: claude-nope")
    _expect_error(url, "/v1/messages", dict(base, foo=1), 400, "foo: Extra inputs are not "
                  "permitted")
    _expect_error(url, "/v1/messages", {"model": "claude-sonnet-4-5", "messages": user}, 400,
                  "max_tokens: Field required")
    _expect_error(url, "/v1/messages", dict(base, max_tokens=70000), 400, "70000 > 64000")
    _expect_error(url, "/v1/messages", dict(base, temperature=1.5), 400,
                  "less than or equal to 1")
    _expect_error(url, "/v1/messages", dict(base, messages=[]), 400, "at least 1 item")
    _expect_error(url, "/v1/messages", dict(base, messages=[
        {"role": "assistant", "content": "Hi"}]), 400, 'first message must use the "user" role')
    _expect_error(url, "/v1/messages", dict(base, messages=[
        {"role": "user", "content": [{"type": "text", "text": ""}]}]), 400,
        "text content blocks must be non-empty")
    _expect_error(url, "/v1/messages", dict(base, messages=[
        {"role": "user", "content": [{"type": "video", "url": "x"}]}]), 400,
        "Input tag 'video'")
    _expect_error(url, "/v1/messages", dict(base, output_config={"effort": "high"}), 400,
                  "not implemented by this fake")
    many = [{"type": "text", "text": f"block {k}", "cache_control": {"type": "ephemeral"}}
            for k in range(5)]
    _expect_error(url, "/v1/messages", dict(base, messages=[{"role": "user", "content": many}]),
                  400, "A maximum of 4 blocks with cache_control may be provided. Found 5.")
    _expect_error(url, "/v1/messages", dict(base, system=[
        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}], messages=[
        {"role": "user", "content": [{"type": "text", "text": "b", "cache_control": {
            "type": "ephemeral", "ttl": "1h"}}]}]), 400,
        "messages.0.content.0.cache_control.ttl: a ttl='1h' cache_control block must not come "
        "after a ttl='5m'")
    _expect_error(url, "/v1/messages", dict(base, system=[
        {"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}]), 400,
        "system.0: cache_control cannot be set for empty text blocks")
    _expect_error(url, "/v1/messages", dict(base, tool_choice={"type": "any"}), 400,
                  "tool_choice.any may only be specified while providing tools")
    _expect_error(url, "/v1/messages", dict(base, messages=user + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "x",
                                           "input": {}}]},
        {"role": "user", "content": "ok"}]), 400, "must define tools")
    tools = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}}]
    _expect_error(url, "/v1/messages", dict(base, tools=tools, messages=user + [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                           "name": "get_weather", "input": {}}]},
        {"role": "user", "content": "ok"}]), 400,
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_1")
    _expect_error(url, "/v1/messages", dict(base, tools=tools, messages=[
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9",
                                      "content": "x"}]}]), 400,
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9")
    thinking = {"type": "enabled", "budget_tokens": 1024}
    _expect_error(url, "/v1/messages", dict(base, thinking=thinking), 400,
                  "`max_tokens` must be greater than `thinking.budget_tokens`")
    code, _, _ = _raw(url, "/v1/messages", dict(base, thinking=thinking),
                      {"anthropic-beta": INTERLEAVED_BETA})
    assert code == 200, code
    _expect_error(url, "/v1/messages", dict(base, max_tokens=2048, thinking=thinking,
                                            temperature=0.5), 400, "`temperature` may only be")
    _expect_error(url, "/v1/messages", dict(base, max_tokens=2048,
                                            thinking={"type": "enabled", "budget_tokens": 100}),
                  400, "greater than or equal to 1024")
    _expect_error(url, "/v1/messages/count_tokens", base, 400,
                  "max_tokens: Extra inputs are not permitted")
    # API version 2026-10-21: no sampling parameters, no document in an assistant turn, no
    # citations on a user's text; a Bearer key is as good as x-api-key.
    new = {"anthropic-version": API_VERSIONS[1]}
    _expect_error(url, "/v1/messages", dict(base, temperature=1), 400,
                  "temperature: Extra inputs are not permitted", new)
    pdf_doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                              "data": "a note"}}
    with_doc = dict(base, messages=user + [{"role": "assistant", "content": [pdf_doc]},
                                           {"role": "user", "content": "ok"}])
    _expect_error(url, "/v1/messages", with_doc, 400, "`document` blocks are not allowed", new)
    assert _raw(url, "/v1/messages", with_doc)[0] == 200
    cited = dict(base, messages=[{"role": "user", "content": [
        {"type": "text", "text": "quoted", "citations": [{"type": "char_location"}]}]}])
    _expect_error(url, "/v1/messages", cited, 400, "cannot carry citations", new)
    code, _, _ = _raw(url, "/v1/messages", base, dict(new, **{
        "x-api-key": None, "authorization": f"Bearer {API_KEY}"}))
    assert code == 200, code
    _expect_error(url, "/v1/messages", base, 400, "is not a valid version",
                  {"anthropic-version": "2024-01-01"})
    code, _, text = _raw(url, "/v1/messages/count_tokens", {
        "model": "claude-sonnet-4-5", "system": "one two three",
        "messages": [{"role": "user", "content": "four five"}]})
    assert code == 200 and json.loads(text) == {"input_tokens": 5}, (code, text)
    # The raw SSE: named events whose data carries the same type, a ping after message_start.
    code, hdrs, text = _raw(url, "/v1/messages", dict(base, stream=True))
    assert code == 200 and hdrs["Content-Type"].startswith("text/event-stream"), (code, hdrs)
    frames = [f for f in text.split("\n\n") if f.strip()]
    names = []
    for frame in frames:
        event, data = frame.split("\n")
        assert event.startswith("event: ") and data.startswith("data: "), frame
        assert json.loads(data[6:])["type"] == event[7:], frame
        names.append(event[7:])
    assert names[:3] == ["message_start", "ping", "content_block_start"] and names[-2:] == [
        "message_delta", "message_stop"], names
    # A pre-warm: max_tokens 0 writes the cache and answers nothing.
    system = [{"type": "text", "text": "word " * 1100, "cache_control": {"type": "ephemeral"}}]
    code, _, text = _raw(url, "/v1/messages", dict(base, max_tokens=0, system=system))
    warm = json.loads(text)
    assert code == 200 and warm["content"] == [] and warm["stop_reason"] == "max_tokens", warm
    assert warm["usage"]["cache_creation_input_tokens"] == 1100, warm["usage"]
    code, _, text = _raw(url, "/v1/messages", dict(base, system=system))
    assert json.loads(text)["usage"]["cache_read_input_tokens"] == 1100, text
    code, _, text = _raw(url, "/_fake/requests", None, method="GET")
    seen = json.loads(text)
    assert seen[0]["status"] == 401 and seen[0]["headers"]["x-api-key"] is False, seen[0]
    assert any(r["headers"]["anthropic-beta"] == [INTERLEAVED_BETA] for r in seen)
    code, _, text = _raw(url, "/_fake/cache", None, method="GET")
    assert [e["tokens"] for e in json.loads(text)] == [1100], text
    print("self-test: raw HTTP checks ok (auth, version, validation, cache_control limits, "
          "tool pairing, thinking rules, count_tokens, pre-warm, /_fake endpoints)")


def _sdk_checks(url):
    try:
        import anthropic
    except ImportError:
        print("self-test: the anthropic SDK is not installed here: SDK checks skipped")
        return
    import warnings
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # the SDK's model notices
    client = anthropic.Anthropic(base_url=url, api_key=API_KEY, max_retries=0)
    model = "claude-sonnet-4-5"
    hello = [{"role": "user", "content": "Hello there"}]

    # create
    m = client.messages.create(model=model, max_tokens=100, messages=hello)
    assert m.content[0].text == "Hello from the fake upstream.", m
    assert m.stop_reason == "end_turn" and m.id.startswith("msg_") and m.model == model, m
    assert m.usage.input_tokens == 2 and m.usage.output_tokens == 5, m.usage
    assert m._request_id and m._request_id.startswith("req_"), m._request_id
    m = client.messages.create(model=model, max_tokens=100, messages=hello,
                               stop_sequences=["fake"])
    assert m.content[0].text == "Hello from the " and m.stop_reason == "stop_sequence" \
        and m.stop_sequence == "fake", m
    m = client.messages.create(model=model, max_tokens=2, messages=hello)
    assert m.content[0].text == "Hello from" and m.stop_reason == "max_tokens", m

    # stream
    with client.messages.stream(model=model, max_tokens=100, messages=hello) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert "".join(pieces) == "Hello from the fake upstream." and len(pieces) == 5, pieces
    assert final.stop_reason == "end_turn" and final.usage.output_tokens == 5, final
    events = [e.type for e in client.messages.create(model=model, max_tokens=100,
                                                     messages=hello, stream=True)]
    assert events == ["message_start", "content_block_start"] + ["content_block_delta"] * 5 + [
        "content_block_stop", "message_delta", "message_stop"], events  # the SDK drops pings

    # tools: weather -> tool_use (streamed input joins), tool_result -> text
    tools = [{"name": "get_weather", "description": "Weather of a city",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]}}]
    ask = [{"role": "user", "content": "What is the weather in Paris and Tokyo?"}]
    with client.messages.stream(model=model, max_tokens=200, tools=tools,
                                messages=ask) as stream:
        called = stream.get_final_message()
    uses = [b for b in called.content if b.type == "tool_use"]
    assert called.stop_reason == "tool_use" and [u.input for u in uses] == [
        {"city": "Paris"}, {"city": "Tokyo"}], called
    assert all(u.id.startswith("toolu_") for u in uses), uses
    follow = ask + [{"role": "assistant", "content": called.content},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": u.id, "content": f"sunny {k}"}
                        for k, u in enumerate(uses)]}]
    m = client.messages.create(model=model, max_tokens=200, tools=tools, messages=follow)
    assert m.content[0].text == "Weather: sunny 0; sunny 1", m

    # thinking round trip, and a tampered signature
    thinking = {"type": "enabled", "budget_tokens": 1024}
    with client.messages.stream(model=model, max_tokens=2048, thinking=thinking, tools=tools,
                                messages=ask) as stream:
        first = stream.get_final_message()
    assert first.content[0].type == "thinking" and first.content[0].signature, first
    assert first.content[0].signature == sign_thinking(first.content[0].thinking)
    uses = [b for b in first.content if b.type == "tool_use"]
    results = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": u.id, "content": "rain"} for u in uses]}
    m = client.messages.create(model=model, max_tokens=2048, thinking=thinking, tools=tools,
                               messages=ask + [{"role": "assistant", "content": first.content},
                                               results])
    assert m.content[0].type == "thinking" and m.content[-1].text == "Weather: rain; rain", m
    tampered = [b.model_dump() for b in first.content]
    tampered[0]["thinking"] += " (edited)"
    try:
        client.messages.create(model=model, max_tokens=2048, thinking=thinking, tools=tools,
                               messages=ask + [{"role": "assistant", "content": tampered},
                                               results])
        raise AssertionError("a tampered thinking block was accepted")
    except anthropic.BadRequestError as e:
        assert "Invalid `signature` in `thinking` block" in str(e), e
    stripped = [b for b in first.content if b.type != "thinking"]
    try:
        client.messages.create(model=model, max_tokens=2048, thinking=thinking, tools=tools,
                               messages=ask + [{"role": "assistant", "content": stripped},
                                               results])
        raise AssertionError("a tool turn without its thinking block was accepted")
    except anthropic.BadRequestError as e:
        assert "Expected `thinking` or `redacted_thinking`" in str(e), e

    # redacted thinking round trip
    magic = [{"role": "user", "content": f"Think hard. {MAGIC_REDACTED}"}]
    with client.messages.stream(model=model, max_tokens=2048, thinking=thinking,
                                messages=magic) as stream:
        red = stream.get_final_message()
    kinds = [b.type for b in red.content]
    assert kinds == ["thinking", "redacted_thinking", "text"], kinds
    again = magic + [{"role": "assistant", "content": red.content},
                     {"role": "user", "content": "And now?"}]
    m = client.messages.create(model=model, max_tokens=2048, thinking=thinking, messages=again)
    assert [b.type for b in m.content] == ["thinking", "text"], m
    broken = [b.model_dump() for b in red.content]
    broken[1]["data"] = broken[1]["data"][:-4] + ("AAAA" if not broken[1]["data"].endswith(
        "AAAA") else "BBBB")
    try:
        client.messages.create(model=model, max_tokens=2048, thinking=thinking,
                               messages=magic + [{"role": "assistant", "content": broken},
                                                 {"role": "user", "content": "And now?"}])
        raise AssertionError("a changed redacted_thinking block was accepted")
    except anthropic.BadRequestError as e:
        assert "Invalid `data` in `redacted_thinking` block" in str(e), e

    # cache: write, then read; 1h before 5m; a changed tool_choice re-writes the messages part
    client.post("/_fake/reset", cast_to=object, body={})
    long_doc = "lorem " * 1500
    system = [{"type": "text", "text": long_doc, "cache_control": {"type": "ephemeral",
                                                                   "ttl": "1h"}}]
    convo = [{"role": "user", "content": [{"type": "text", "text": "ipsum " * 600,
                                           "cache_control": {"type": "ephemeral"}}]}]
    w = client.messages.create(model=model, max_tokens=50, system=system, messages=convo).usage
    assert (w.input_tokens, w.cache_creation_input_tokens, w.cache_read_input_tokens) == (
        0, 2100, 0), w
    assert (w.cache_creation.ephemeral_1h_input_tokens,
            w.cache_creation.ephemeral_5m_input_tokens) == (1500, 600), w
    r = client.messages.create(model=model, max_tokens=50, system=system,
                               messages=convo + [
                                   {"role": "assistant", "content": "ok"},
                                   {"role": "user", "content": [
                                       {"type": "text", "text": "more words here",
                                        "cache_control": {"type": "ephemeral"}}]}]).usage
    # the lookback from the new last breakpoint finds the previous turn's entry (2100)
    assert (r.input_tokens, r.cache_creation_input_tokens, r.cache_read_input_tokens) == (
        0, 4, 2100), r
    counted = client.messages.count_tokens(model=model, system=system, messages=convo)
    assert counted.input_tokens == 2100, counted
    s = client.messages.create(model=model, max_tokens=50, system=[
        {"type": "text", "text": "short system", "cache_control": {"type": "ephemeral"}}],
        messages=hello).usage
    assert (s.cache_creation_input_tokens, s.cache_read_input_tokens, s.input_tokens) == (
        0, 0, 4), s  # under the 1024-token minimum: nothing cached
    auto = client.messages.create(model=model, max_tokens=50, system=long_doc,
                                  messages=hello, cache_control={"type": "ephemeral"}).usage
    # a string system prompt is the same block as the earlier cached text block: read 1500
    assert (auto.cache_read_input_tokens, auto.cache_creation_input_tokens,
            auto.input_tokens) == (1500, 2, 0), auto
    auto = client.messages.create(model=model, max_tokens=50, system=long_doc,
                                  messages=hello + [{"role": "assistant", "content": "Hi"},
                                                    {"role": "user", "content": "Again"}],
                                  cache_control={"type": "ephemeral"}).usage
    assert (auto.cache_read_input_tokens, auto.cache_creation_input_tokens) == (1502, 2), auto
    entries = client.get("/_fake/cache", cast_to=object)
    assert sorted((e["tokens"], e["ttl"]) for e in entries) == [
        (1500, "1h"), (1502, "5m"), (1504, "5m"), (2100, "5m"), (2104, "5m")], entries

    # count_tokens equals a create's input + cache fields; beta header recorded
    c = client.messages.count_tokens(model=model, tools=tools, messages=ask)
    m = client.messages.create(model=model, max_tokens=200, tools=tools, messages=ask)
    assert c.input_tokens == m.usage.input_tokens, (c, m.usage)
    client.beta.messages.create(model=model, max_tokens=20, messages=hello,
                                betas=["context-1m-2025-08-07"])
    seen = client.get("/_fake/requests", cast_to=object)
    assert seen[-1]["headers"]["anthropic-beta"] == ["context-1m-2025-08-07"], seen[-1]
    try:
        client.messages.create(model="claude-unknown", max_tokens=10, messages=hello)
        raise AssertionError("an unknown model was accepted")
    except anthropic.NotFoundError as e:
        assert e.body["error"]["type"] == "not_found_error", e.body
    print(f"self-test: anthropic SDK {anthropic.__version__} checks ok (create, stream, tool "
          "round trip, thinking round trip and tampering, redacted thinking round trip, cache "
          "write/read/lookback/TTL split/minimum/automatic caching, count_tokens, beta header)")


def self_test():
    text = "some thinking"
    assert thinking_signature_ok(text, sign_thinking(text))
    assert not thinking_signature_ok(text + "!", sign_thinking(text))
    data = new_redacted_data()
    flipped = data[:40] + ("A" if data[40] != "A" else "B") + data[41:]
    assert redacted_data_ok(data) and not redacted_data_ok(flipped)
    server = serve(0)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _raw_checks(url)
        _sdk_checks(url)
    finally:
        server.shutdown()
        server.server_close()
    print("self-test ok")


def main():
    global GAP_SECONDS, API_KEY
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--gap-ms", type=int, default=0)
    parser.add_argument("--api-key", default=API_KEY)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        return
    GAP_SECONDS = args.gap_ms / 1000
    API_KEY = args.api_key
    server = serve(args.port)
    print(f"FAKE_ANTHROPIC_URL=http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
