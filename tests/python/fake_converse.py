"""FakeConverse: a tiny Amazon Bedrock Runtime (Converse, ConverseStream, CountTokens) for tests.

It is a fake, for tests only: it speaks Bedrock Runtime's REST-JSON wire protocol with scripted,
deterministic answers (the same script as fake_upstream.py, so one test can run over both) and
it refuses what the real service refuses, so that the tests catch a gateway sending Bedrock
something it would not take.

    python fake_converse.py [--port PORT] [--gap-ms MS]
    python fake_converse.py --self-test

prints `FAKE_CONVERSE_URL=http://127.0.0.1:<port>` on its first line once it listens (port 0
picks a free port). Point the AWS SDK's `endpoint_url` at it; any credentials will do.

Endpoints (the paths the AWS SDK builds; the model id is percent-encoded in the path):

- POST /model/{modelId}/converse        -> a JSON ConverseResponse;
- POST /model/{modelId}/converse-stream -> `application/vnd.amazon.eventstream`, chunked;
- POST /model/{modelId}/count-tokens    -> `{"inputTokens": n}`;
- GET  /_fake/requests -> every request the three endpoints received, in order, refused ones
  included: `[{"operation": "converse"|"converse-stream"|"count-tokens", "model": <decoded
  model id>, "body": <JSON body, or null when it was not JSON>}]` (the body as sent, cache
  points where the client put them);
- GET  /_fake/cache -> the prompt-cache entries (see Prompt caching): `[{"hash", "model",
  "tokens", "ttl"}]`;
- POST /_fake/reset -> `{}`; forgets the recorded requests and the prompt cache.

Errors are answered the REST-JSON way: the HTTP status, a JSON body `{"message": "..."}` and
the header `x-amzn-ErrorType: <Type>:http://internal.amazon.com/coral/com.amazon.bedrock/`,
as the service sends it (the AWS SDK reads the type from this header and drops what follows the
colon). A ConverseStream request that fails validation is answered the same way, before any
event. The types used: 400 ValidationException, 400 IncompleteSignatureException, 403
AccessDeniedException, 403 InvalidSignatureException, 404 ResourceNotFoundException, 404
UnknownOperationException.

Authentication: every POST to /model/... needs `Authorization: AWS4-HMAC-SHA256 Credential=
.../bedrock/aws4_request, SignedHeaders=..., Signature=...` and an `X-Amz-Date` (or `Date`)
header. The signature itself is not checked. No Authorization -> 403 AccessDeniedException with
the body `{"Message": "Authorization header is missing"}` (Bedrock's capital M); another scheme
(a Bedrock API key's `Bearer` included: this fake only takes SigV4) -> 403 AccessDenied; a SigV4
header missing a part or the date -> 400 IncompleteSignature; a credential scoped to another
service than `bedrock` (e.g. `bedrock-runtime`) -> 403 InvalidSignatureException.

Models: an id (or ARN) containing `anthropic.claude` (Claude) or `amazon.nova` (Nova), with or
without a cross-region prefix (`us.`, `eu.`, `global.`, ...), is known. Any other id -> 400
ValidationException "The provided model identifier is invalid." (what Bedrock answers); any
other ARN -> 404 ResourceNotFoundException.

Validation (each failure -> 400 ValidationException):

- the body is a JSON object with only the members the API defines (Converse/ConverseStream:
  additionalModelRequestFields, additionalModelResponseFieldPaths, guardrailConfig,
  inferenceConfig, messages, outputConfig, performanceConfig, promptVariables, requestMetadata,
  serviceTier, system, toolConfig; CountTokens: input); nested shapes that this fake inspects
  are closed the same way (message, inferenceConfig, toolConfig, toolSpec, toolUse, toolResult,
  image, ...), and every union (content block, tool, toolChoice, image source, ...) must hold
  exactly one member of the ones the API defines;
- `messages` is a non-empty list; roles are `user`/`assistant`; the first is `user`; roles
  alternate; a message's content is a non-empty list; a text block is not blank;
- image, document and video blocks only in user messages, at most 20 images, image `format`
  one of png|jpeg|gif|webp, `source.bytes` valid base64 of at most 3.75 MB;
- toolUse and reasoningContent blocks only in assistant messages, toolResult blocks only in user
  messages; a toolResult answers a toolUse of the message just before (ids must match, and no
  more results than uses); every toolUse of an assistant message followed by another message is
  answered there ("Expected toolResult blocks at messages.N.content for the following Ids");
  toolUse/toolResult blocks need `toolConfig`; an `error` toolResult needs content;
- inferenceConfig: maxTokens >= 1, temperature and topP in [0, 1], at most 2500 stopSequences
  (the API reference's limit), each non-empty;
- toolConfig: `tools` non-empty (so no toolChoice without tools), each toolSpec has a `name`
  (1-64 of [a-zA-Z0-9_-], unique) and `inputSchema.json` (an object); a `tool` toolChoice names
  one of the tools;
- Claude: `additionalModelRequestFields.thinking` is `{"type": "enabled", "budget_tokens": n}`
  (or `{"type": "disabled"}` / `{"type": "adaptive"}`); with `enabled`, n >= 1024 and, when
  maxTokens is given, n < maxTokens; with thinking on, temperature (if given) must be 1, topP
  (if given) >= 0.95, no `top_k`, no `any`/`tool` toolChoice, no assistant prefill, and the
  assistant turn whose toolUse blocks the final user turn answers must start with a
  reasoningContent block (these are the model's refusals, prefixed "The model returned the
  following errors: " as Bedrock does);
- Nova: additionalModelRequestFields only holds `inferenceConfig` and `reasoningConfig` (Nova's
  own schema refuses other keys: "extraneous key [k] is not permitted");
- additionalModelResponseFieldPaths: at most 10 JSON pointers ("/..."), each 1-256 chars;
- cache points (the API reference's CachePointBlock), see Prompt caching.

Prompt caching. A `{"cachePoint": {"type": "default", "ttl"?: "5m"|"1h"}}` member is taken
only where the API reference's unions hold one: an element of `system` (SystemContentBlock), of
`toolConfig.tools` (Tool) and of a user or assistant message's `content` (ContentBlock); anywhere
else (a toolResult's content, inferenceConfig, ...) it is an unknown member. Refused (400
ValidationException): a member other than `type`/`ttl`, a `type` other than `default`, a `ttl`
other than `5m`/`1h` (CachePointBlock.ttl's valid values), a cache point first in its list
(it marks the end of the blocks before it in the same list), more than 4 in a request
(MAX_CACHE_POINTS, the user guide's limit), for Nova one in `toolConfig.tools` (the user guide
lists system and messages as Nova's checkpoint fields), and for Claude a `1h` point after a
`5m` one along tools, system, messages (a model error: longer TTLs must come first; no ttl
means 5m). CountTokens checks them the same way and counts them as 0 tokens.

Accounting, kept in memory across requests (GET /_fake/cache, cleared by POST /_fake/reset):
the prompt is walked in Converse order, toolConfig.tools then system then messages, each
tool, system block and message block counted as CountTokens counts it (see below: `_words`,
the whitespace-separated words of its texts, + 100 per image; a tool counts its description).
Each cache point closes a prefix with a token count (the 3 framing tokens left out) and a
hash: sha256 over the model id (as in the path) then the canonical JSON (sorted keys, no
spaces) of every item before it -- `["tools", tool]`, `["system", block]`, `["messages",
index, role, block]` -- cache points left out, so moving a point does not change the prefixes
of the others. A point whose prefix is under the model's minimum (CLAUDE_MIN_CACHE_TOKENS =
1024 for Claude, NOVA_MIN_CACHE_TOKENS = 1000 for Nova) is ignored. The last point whose prefix
is cached is read: its tokens are `cacheReadInputTokens` (and its entry's countdown restarts).
The points after it are written: `cacheWriteInputTokens` = the last point's tokens - the read
ones, each of their prefixes stored with its ttl (entries expire after it: 300 s or 3600 s);
`cacheDetails` splits the write by the ttl of the point that closes each stretch (1h first,
only non-zero; `[]` without a write). `inputTokens` = the prompt's CountTokens count - read -
write (the tokens after the last written or read point, and the 3 framing tokens).

Answers (like fake_upstream.py):

- toolConfig given and the last message is a user message without toolResult blocks: two
  `toolUse` blocks, `get_weather` with {"city": "Paris"} (id `tooluse_paris`) and {"city":
  "Tokyo"} (id `tooluse_tokyo`), stopReason `tool_use`;
- the last message holds toolResult blocks: "Weather: <the results joined by '; '>", every
  toolResult of the conversation in order, each result its text/json contents joined by ' ';
- an image block anywhere: "image <n> bytes png=<true|false>" (n decoded bytes; png = PNG magic);
- otherwise: "Hello from the fake upstream.".

The text is cut before the first stop sequence found (stopReason `stop_sequence`, as Bedrock
reports it for Claude) and after maxTokens words (stopReason `max_tokens`), else `end_turn`.
With Claude thinking (or Nova reasoningConfig) on, a reasoningContent block
`{"reasoningText": {"text": "Thinking about it.", "signature": "fake-signature"}}` comes first
(Nova's has no signature). Usage, for a request without a cache point, is inputTokens=10 (its real
count with `--count-input`),
outputTokens=<words> (or the number of tool calls), totalTokens their sum; for a request with
one, inputTokens, cacheReadInputTokens and cacheWriteInputTokens (both, even when 0) and
cacheDetails as Prompt caching says, totalTokens = input + output + read + write. ConverseStream's
metadata event carries the same usage. `metrics.latencyMs` is the time the fake took.
`additionalModelResponseFields` is only sent when additionalModelResponseFieldPaths asks for
it; for Claude `/stop_sequence` gives `{"stop_sequence": <the matched sequence or null>}`.

ConverseStream sends AWS event-stream messages (prelude: total length, headers length, CRC32;
string headers `:event-type`, `:content-type` application/json, `:message-type` event; JSON
payload; CRC32 of the whole message), each its own HTTP chunk, `--gap-ms` apart (default 0):
messageStart {"role": "assistant"}; for reasoning, a contentBlockDelta with
`reasoningContent.text` then one with `reasoningContent.signature`; for text, one
contentBlockDelta per word (the first bare, the next ones with a leading space, so they join to
the non-streamed text); for a toolUse, contentBlockStart {"start": {"toolUse": {toolUseId,
name}}} then two contentBlockDelta {"toolUse": {"input": fragment}} that join to the JSON input;
a contentBlockStop after each block; messageStop {"stopReason"}; metadata {"usage", "metrics"}.
Like Bedrock's, every payload also carries a padding member `"p"` (clients ignore it).

CountTokens takes `{"input": {"converse": {"messages", "system", "toolConfig",
"additionalModelRequestFields"}}}` (validated as Converse's) or `{"input": {"invokeModel":
{"body": "<string>"}}}` and answers inputTokens = 3 + the whitespace-separated words of every
text (message text blocks, toolResult texts, system texts, tool descriptions; for invokeModel,
the body string) + 100 per image (cache points count 0 and change nothing). Only bare Claude
ids (or foundation-model ARNs) can count: a Nova id or a cross-region profile id
(`us.anthropic...`) -> 400 ValidationException "The provided model doesn't support counting
tokens.", as Bedrock answers.
"""

import argparse
import base64
import binascii
import hashlib
import json
import re
import struct
import sys
import threading
import time
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

REQUESTS = []
CACHE = {}  # prefix hash -> {"hash", "model", "tokens", "ttl", "expires" (time.monotonic())}
LOCK = threading.Lock()
GAP_SECONDS = 0.0
COUNT_INPUT = False  # --count-input: real counts for requests without cache points too

ERROR_TYPE_SUFFIX = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
PATH_RE = re.compile(r"^/model/([^/]+)/(converse|converse-stream|count-tokens)$")
TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MAX_IMAGES = 20
MAX_IMAGE_BYTES = 3932160  # 3.75 MB
MAX_STOP_SEQUENCES = 2500
PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
MODEL_ERRORS = "The model returned the following errors: "
# Prompt caching. The user guide's limits: at most 4 cache points per request; a point counts
# only once the prefix before it reaches the model's minimum (1,024 tokens for Claude 3.7 Sonnet,
# the Claude this fake stands for; 1,000 for Nova), else it is ignored. TTLs: CachePointBlock.ttl.
MAX_CACHE_POINTS = 4
CLAUDE_MIN_CACHE_TOKENS = 1024
NOVA_MIN_CACHE_TOKENS = 1000
MIN_CACHE_TOKENS = {"claude": CLAUDE_MIN_CACHE_TOKENS, "nova": NOVA_MIN_CACHE_TOKENS}
CACHE_TTLS = {"5m": 300, "1h": 3600}  # the valid values of CachePointBlock.ttl, in seconds
DEFAULT_CACHE_TTL = "5m"

CONVERSE_FIELDS = {
    "additionalModelRequestFields", "additionalModelResponseFieldPaths", "guardrailConfig",
    "inferenceConfig", "messages", "outputConfig", "performanceConfig", "promptVariables",
    "requestMetadata", "serviceTier", "system", "toolConfig",
}
COUNT_CONVERSE_FIELDS = {"messages", "system", "toolConfig", "additionalModelRequestFields"}
CONTENT_MEMBERS = {
    "text", "image", "document", "video", "audio", "toolUse", "toolResult", "guardContent",
    "cachePoint", "reasoningContent", "citationsContent", "searchResult", "toolAddition",
    "toolRemoval",
}
USER_ONLY = {"image", "document", "video", "audio", "toolResult"}
ASSISTANT_ONLY = {"toolUse", "reasoningContent"}
SYSTEM_MEMBERS = {"text", "guardContent", "cachePoint"}
TOOL_RESULT_MEMBERS = {"text", "json", "image", "document", "video", "searchResult"}
IMAGE_FORMATS = ("png", "jpeg", "gif", "webp")


class Refusal(Exception):
    """An error answer: HTTP status, the error type and its message."""

    def __init__(self, status, kind, message):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def invalid(message):
    return Refusal(400, "ValidationException", message)


def constraint(value, path, rule):
    """The service's own wording for a shape constraint (1-based list indexes, `member`)."""
    shown = "" if isinstance(value, (dict, list)) else f" '{value}'"
    return invalid(f"1 validation error detected: Value{shown} at '{path}' failed to satisfy "
                   f"constraint: {rule}")


# ---------------------------------------------------------------------------- event stream

def encode_event(event_type, payload, message_type="event"):
    """One AWS event-stream message: prelude + its CRC, string headers, payload, message CRC."""
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"),
                        (":message-type", message_type)):
        n, v = name.encode(), value.encode()
        headers += struct.pack(">B", len(n)) + n + b"\x07" + struct.pack(">H", len(v)) + v
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


def decode_event(data):
    """(headers, payload, rest) of the first message in `data`; both CRCs are checked."""
    total, headers_len = struct.unpack(">II", data[:8])
    if struct.unpack(">I", data[8:12])[0] != zlib.crc32(data[:8]):
        raise ValueError("prelude CRC mismatch")
    if struct.unpack(">I", data[total - 4:total])[0] != zlib.crc32(data[:total - 4]):
        raise ValueError("message CRC mismatch")
    headers, at, end = {}, 12, 12 + headers_len
    while at < end:
        name_len = data[at]
        name = data[at + 1:at + 1 + name_len].decode()
        at += 1 + name_len
        if data[at] != 7:
            raise ValueError(f"header {name}: type {data[at]} is not a string")
        value_len = struct.unpack(">H", data[at + 1:at + 3])[0]
        headers[name] = data[at + 3:at + 3 + value_len].decode()
        at += 3 + value_len
    return headers, data[end:total - 4], data[total:]


# ------------------------------------------------------------------------------ validation

def _obj(value, path):
    if not isinstance(value, dict):
        raise invalid(f"{path} must be a JSON object.")
    return value


def _closed(obj, allowed, path):
    for key in obj:
        if key not in allowed:
            raise invalid(f"Unknown member '{key}' in {path}; it accepts only: "
                          f"{', '.join(sorted(allowed))}.")


def _union(value, allowed, path):
    """The one member of a union (the API's unions hold exactly one)."""
    _obj(value, path)
    keys = list(value)
    if len(keys) != 1:
        raise invalid(f"{path} must hold exactly one member, found {len(keys)}"
                      f"{': ' + ', '.join(keys) if keys else ''}.")
    if keys[0] not in allowed:
        raise invalid(f"Unknown member '{keys[0]}' in {path}; it accepts one of: "
                      f"{', '.join(sorted(allowed))}.")
    return keys[0], value[keys[0]]


def _int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _image_bytes(image, path, family):
    """Check an ImageBlock; its decoded bytes (b"" for an S3 source)."""
    _obj(image, path)
    _closed(image, {"format", "source"}, path)
    fmt = image.get("format")
    if fmt not in IMAGE_FORMATS:
        raise invalid(f"{path}.format '{fmt}' is not one of: {', '.join(IMAGE_FORMATS)}.")
    kind, source = _union(image.get("source"), {"bytes", "s3Location"}, f"{path}.source")
    if kind == "s3Location":
        if family == "claude":
            raise invalid(f"{path}.source: this model does not support images from an S3 "
                          "location; send the bytes.")
        return b""
    if not isinstance(source, str) or not source:
        raise invalid(f"{path}.source.bytes must be a non-empty base64 string.")
    try:
        data = base64.b64decode(source, validate=True)
    except (binascii.Error, ValueError):
        raise invalid(f"{path}.source.bytes is not valid base64.")
    if len(data) > MAX_IMAGE_BYTES:
        raise invalid(f"{path}: the image is {len(data)} bytes; the limit is 3.75 MB.")
    return data


def _check_text(text, path):
    if not isinstance(text, str):
        raise invalid(f"{path} must be a string.")
    if not text.strip():
        raise invalid(f"The text field in the ContentBlock object at {path} is blank. "
                      "Add text to the text field, and try again.")


def _check_cache_point(value, path, shape_path, index):
    """A CachePointBlock: {"type": "default", "ttl"?: "5m"|"1h"}, never first in its list (a
    point marks the end of the blocks before it in the same list)."""
    _obj(value, path)
    _closed(value, {"type", "ttl"}, path)
    if value.get("type") != "default":
        raise constraint(value.get("type", "null"), f"{shape_path}.type",
                         "Member must satisfy enum value set: [default]")
    if "ttl" in value and value["ttl"] not in CACHE_TTLS:
        raise constraint(value["ttl"], f"{shape_path}.ttl",
                         f"Member must satisfy enum value set: [{', '.join(CACHE_TTLS)}]")
    if index == 0:
        raise invalid(f"{path}: a cache point cannot be the first block of its list; put it "
                      "after the content to cache.")


def _check_tool_result(result, i, j, family):
    path = f"messages.{i}.content.{j}.toolResult"
    _obj(result, path)
    _closed(result, {"toolUseId", "content", "status", "type"}, path)
    tid = result.get("toolUseId")
    if not isinstance(tid, str) or not TOOL_NAME_RE.match(tid):
        raise invalid(f"{path}.toolUseId must be 1-64 characters of [a-zA-Z0-9_-].")
    status = result.get("status")
    if status is not None and status not in ("success", "error"):
        raise constraint(status, f"messages.{i + 1}.member.content.{j + 1}.member.toolResult"
                                 ".status", "Member must satisfy enum value set: [success, error]")
    content = result.get("content")
    if not isinstance(content, list):
        raise invalid(f"{path}.content must be a list of content blocks.")
    if status == "error" and not content:
        raise invalid(f"The content field at {path} cannot be empty when status value is error.")
    images = []
    for k, block in enumerate(content):
        kind, value = _union(block, TOOL_RESULT_MEMBERS, f"{path}.content.{k}")
        if kind == "text":
            _check_text(value, f"{path}.content.{k}.text")
        elif kind == "image":
            images.append(_image_bytes(value, f"{path}.content.{k}.image", family))
    return tid, images


def check_messages(messages, family):
    """Validate a conversation the way Converse does; returns the decoded images in order."""
    if not isinstance(messages, list) or not messages:
        raise invalid("The messages field is required and must hold at least one message.")
    images, previous_uses = [], None
    for i, message in enumerate(messages):
        path = f"messages.{i}"
        _obj(message, path)
        _closed(message, {"role", "content"}, path)
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise constraint(role, f"messages.{i + 1}.member.role",
                             "Member must satisfy enum value set: [user, assistant]")
        if i == 0 and role != "user":
            raise invalid("A conversation must start with a user message. Try again with a "
                          "conversation that starts with a user message.")
        if i > 0 and role == messages[i - 1].get("role"):
            raise invalid("A conversation must alternate between user and assistant roles. "
                          "Make sure the conversation alternates between user and assistant "
                          "roles and try again.")
        content = message.get("content")
        if not isinstance(content, list):
            raise invalid(f"{path}.content is required and must be a list of content blocks.")
        if not content:
            raise invalid(f"{path}.content must hold at least one content block.")
        uses, results = [], []
        for j, block in enumerate(content):
            kind, value = _union(block, CONTENT_MEMBERS, f"{path}.content.{j}")
            if kind in USER_ONLY and role != "user":
                raise invalid(f"{path}.content.{j}: {kind} blocks are only allowed in user "
                              "messages.")
            if kind in ASSISTANT_ONLY and role != "assistant":
                raise invalid(f"{path}.content.{j}: {kind} blocks are only allowed in "
                              "assistant messages.")
            if kind == "text":
                _check_text(value, f"{path}.content.{j}")
            elif kind == "image":
                images.append(_image_bytes(value, f"{path}.content.{j}.image", family))
            elif kind == "toolUse":
                tpath = f"{path}.content.{j}.toolUse"
                _obj(value, tpath)
                _closed(value, {"toolUseId", "name", "input", "type"}, tpath)
                tid = value.get("toolUseId")
                if not isinstance(tid, str) or not TOOL_NAME_RE.match(tid):
                    raise invalid(f"{tpath}.toolUseId must be 1-64 characters of [a-zA-Z0-9_-].")
                if not isinstance(value.get("name"), str) or not value["name"]:
                    raise invalid(f"{tpath}.name is required.")
                if "input" not in value:
                    raise invalid(f"{tpath}.input is required.")
                uses.append(tid)
            elif kind == "toolResult":
                tid, result_images = _check_tool_result(value, i, j, family)
                images.extend(result_images)
                results.append((j, tid))
            elif kind == "reasoningContent":
                rkind, rvalue = _union(value, {"reasoningText", "redactedContent"},
                                       f"{path}.content.{j}.reasoningContent")
                if rkind == "reasoningText":
                    rpath = f"{path}.content.{j}.reasoningContent.reasoningText"
                    _obj(rvalue, rpath)
                    _closed(rvalue, {"text", "signature"}, rpath)
                    if not isinstance(rvalue.get("text"), str):
                        raise invalid(f"{rpath}.text is required.")
            elif kind == "cachePoint":
                _check_cache_point(value, f"{path}.content.{j}.cachePoint",
                                   f"messages.{i + 1}.member.content.{j + 1}.member.cachePoint", j)
        if results:
            if not previous_uses:
                raise invalid(f"The number of toolResult blocks at {path}.content exceeds the "
                              "number of toolUse blocks of previous turn.")
            if len(results) > len(previous_uses):
                raise invalid(f"The number of toolResult blocks at {path}.content exceeds the "
                              "number of toolUse blocks of previous turn.")
            for j, tid in results:
                if tid not in previous_uses:
                    raise invalid(f"{path}.content.{j}: toolResult toolUseId '{tid}' answers no "
                                  f"toolUse block of messages.{i - 1}.")
        if previous_uses:
            answered = {tid for _, tid in results}
            missing = [tid for tid in previous_uses if tid not in answered]
            if missing:
                raise invalid(f"Expected toolResult blocks at {path}.content for the following "
                              f"Ids: {', '.join(missing)}")
        previous_uses = uses
    if len(images) > MAX_IMAGES:
        raise invalid(f"Too many images: the request holds {len(images)}; the limit is "
                      f"{MAX_IMAGES}.")
    return images


def _uses_tools(messages):
    return any(isinstance(block, dict) and ("toolUse" in block or "toolResult" in block)
               for m in messages for block in m.get("content") or [])


def check_system(system, family):
    if system is None:
        return
    if not isinstance(system, list):
        raise invalid("system must be a list of system content blocks.")
    for k, block in enumerate(system):
        kind, value = _union(block, SYSTEM_MEMBERS, f"system.{k}")
        if kind == "text":
            _check_text(value, f"system.{k}")
        elif kind == "cachePoint":
            _check_cache_point(value, f"system.{k}.cachePoint",
                               f"system.{k + 1}.member.cachePoint", k)


def check_inference(config):
    if config is None:
        return {}
    _obj(config, "inferenceConfig")
    _closed(config, {"maxTokens", "temperature", "topP", "stopSequences"}, "inferenceConfig")
    if "maxTokens" in config:
        value = config["maxTokens"]
        if not _int(value):
            raise invalid("inferenceConfig.maxTokens must be an integer.")
        if value < 1:
            raise constraint(value, "inferenceConfig.maxTokens",
                             "Member must have value greater than or equal to 1")
    for name in ("temperature", "topP"):
        if name in config:
            value = config[name]
            if not _number(value):
                raise invalid(f"inferenceConfig.{name} must be a number.")
            if value < 0:
                raise constraint(value, f"inferenceConfig.{name}",
                                 "Member must have value greater than or equal to 0")
            if value > 1:
                raise constraint(value, f"inferenceConfig.{name}",
                                 "Member must have value less than or equal to 1")
    if "stopSequences" in config:
        stops = config["stopSequences"]
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise invalid("inferenceConfig.stopSequences must be a list of strings.")
        if len(stops) > MAX_STOP_SEQUENCES:
            raise constraint(stops, "inferenceConfig.stopSequences",
                             f"Member must have length less than or equal to {MAX_STOP_SEQUENCES}")
        for k, s in enumerate(stops):
            if not s:
                raise constraint(s, f"inferenceConfig.stopSequences.{k + 1}.member",
                                 "Member must have length greater than or equal to 1")
    return config


def check_tool_config(config, family=None):
    """Validate toolConfig; returns (tool names, toolChoice kind or None)."""
    if config is None:
        return [], None
    _obj(config, "toolConfig")
    _closed(config, {"tools", "toolChoice"}, "toolConfig")
    tools = config.get("tools")
    if not isinstance(tools, list) or not tools:
        raise constraint(tools if tools is not None else "null", "toolConfig.tools",
                         "Member must have length greater than or equal to 1")
    names = []
    for k, tool in enumerate(tools):
        kind, value = _union(tool, {"toolSpec", "cachePoint", "systemTool"},
                             f"toolConfig.tools.{k}")
        if kind == "cachePoint":
            if family == "nova":
                raise invalid(f"toolConfig.tools.{k}.cachePoint: this model does not support "
                              "cache points in tools; it takes them in system and messages.")
            _check_cache_point(value, f"toolConfig.tools.{k}.cachePoint",
                               f"toolConfig.tools.{k + 1}.member.cachePoint", k)
        if kind != "toolSpec":
            continue
        path = f"toolConfig.tools.{k}.toolSpec"
        _obj(value, path)
        _closed(value, {"name", "description", "inputSchema", "strict"}, path)
        name = value.get("name")
        if not isinstance(name, str) or not TOOL_NAME_RE.match(name):
            raise constraint(name if isinstance(name, str) else "null",
                             f"toolConfig.tools.{k + 1}.member.toolSpec.name",
                             "Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+ "
                             "and have length between 1 and 64")
        if name in names:
            raise invalid(f"Tool names must be unique: '{name}' is given twice.")
        names.append(name)
        if "description" in value and (not isinstance(value["description"], str)
                                       or not value["description"]):
            raise constraint("", f"toolConfig.tools.{k + 1}.member.toolSpec.description",
                             "Member must have length greater than or equal to 1")
        schema_kind, schema = _union(value.get("inputSchema"), {"json"}, f"{path}.inputSchema")
        if not isinstance(schema, dict):
            raise invalid(f"{path}.inputSchema.json must be a JSON Schema object.")
    choice = config.get("toolChoice")
    if choice is None:
        return names, None
    kind, value = _union(choice, {"auto", "any", "tool"}, "toolConfig.toolChoice")
    _obj(value, f"toolConfig.toolChoice.{kind}")
    if kind == "tool":
        _closed(value, {"name"}, "toolConfig.toolChoice.tool")
        if value.get("name") not in names:
            raise invalid(f"toolConfig.toolChoice.tool.name '{value.get('name')}' is not the "
                          "name of a tool in toolConfig.tools.")
    else:
        _closed(value, set(), f"toolConfig.toolChoice.{kind}")
    return names, kind


def check_model_fields(body, family, inference, choice, for_count=False):
    """Model-specific checks on additionalModelRequestFields; returns whether reasoning is on."""
    extra = body.get("additionalModelRequestFields")
    if extra is None:
        return False
    _obj(extra, "additionalModelRequestFields")
    if family == "nova":
        for key in extra:
            if key not in ("inferenceConfig", "reasoningConfig"):
                raise invalid(f"Malformed input request: #: extraneous key [{key}] is not "
                              "permitted, please reformat your input and try again.")
        reasoning = extra.get("reasoningConfig")
        if reasoning is None:
            return False
        _obj(reasoning, "additionalModelRequestFields.reasoningConfig")
        if reasoning.get("type") not in ("enabled", "disabled"):
            raise invalid("Malformed input request: #/reasoningConfig/type: "
                          f"{reasoning.get('type')} is not a valid enum value")
        effort = reasoning.get("maxReasoningEffort")
        if effort is not None and effort not in ("low", "medium", "high"):
            raise invalid("Malformed input request: #/reasoningConfig/maxReasoningEffort: "
                          f"{effort} is not a valid enum value")
        return reasoning.get("type") == "enabled"

    thinking = extra.get("thinking")
    if thinking is None:
        return False
    if not isinstance(thinking, dict) or thinking.get("type") not in ("enabled", "disabled",
                                                                      "adaptive"):
        raise invalid(MODEL_ERRORS + "thinking: the type must be one of 'enabled', 'disabled', "
                      "'adaptive'.")
    if thinking["type"] == "disabled":
        return False
    if thinking["type"] == "enabled":
        budget = thinking.get("budget_tokens")
        if budget is None:
            raise invalid(MODEL_ERRORS + "thinking.enabled.budget_tokens: Field required")
        if not _int(budget):
            raise invalid(MODEL_ERRORS + "thinking.enabled.budget_tokens: Input should be a "
                          "valid integer")
        if budget < 1024:
            raise invalid(MODEL_ERRORS + "thinking.enabled.budget_tokens: Input should be "
                          "greater than or equal to 1024")
        max_tokens = inference.get("maxTokens")
        if max_tokens is not None and budget >= max_tokens:
            raise invalid(MODEL_ERRORS + "`max_tokens` must be greater than "
                          "`thinking.budget_tokens`.")
    if for_count:
        return True
    if "temperature" in inference and inference["temperature"] != 1:
        raise invalid(MODEL_ERRORS + "`temperature` may only be set to 1 when thinking is "
                      "enabled.")
    if "topP" in inference and inference["topP"] < 0.95:
        raise invalid(MODEL_ERRORS + "`top_p` must be greater than or equal to 0.95 or unset "
                      "when thinking is enabled.")
    if "top_k" in extra:
        raise invalid(MODEL_ERRORS + "`top_k` must be unset when thinking is enabled.")
    if choice in ("any", "tool"):
        raise invalid(MODEL_ERRORS + "Thinking may not be enabled when tool_choice forces tool "
                      "use.")
    return True


def check_thinking_turns(messages):
    """With Claude thinking on: no prefill, and the tool-using turn starts with reasoning."""
    if messages[-1].get("role") == "assistant":
        raise invalid(MODEL_ERRORS + "an assistant prefill (a final assistant message) is not "
                      "allowed when thinking is enabled.")
    last = messages[-1]
    if len(messages) >= 2 and any("toolResult" in b for b in last["content"]):
        turn = messages[-2]
        first = turn["content"][0]
        if "reasoningContent" not in first:
            kind = next(iter(first))
            raise invalid(MODEL_ERRORS + f"messages.{len(messages) - 2}.content.0: expected a "
                          f"reasoningContent block but found {kind}. When thinking is enabled, "
                          "the assistant turn that holds the toolUse blocks answered by the "
                          "final toolResult blocks must start with its reasoningContent block.")


def check_response_paths(paths):
    if paths is None:
        return []
    if not isinstance(paths, list) or len(paths) > 10:
        raise constraint(paths, "additionalModelResponseFieldPaths",
                         "Member must have length less than or equal to 10")
    for k, p in enumerate(paths):
        if not isinstance(p, str) or not 1 <= len(p) <= 256 or not p.startswith("/"):
            raise invalid(f"additionalModelResponseFieldPaths.{k} must be a JSON pointer "
                          "(\"/...\") of 1 to 256 characters.")
    return paths


def check_cache_points(converse, family):
    """Request-wide cache point rules (each point was checked where it stands): at most
    MAX_CACHE_POINTS; for Claude, no 1h point after a 5m one (Anthropic's ordering rule: TTLs
    may only shrink along tools, system, messages)."""
    points = [part[1] for part in prompt_parts(converse) if part[0] == "point"]
    if len(points) > MAX_CACHE_POINTS:
        raise invalid(f"The request holds {len(points)} cache points (cachePoint blocks in "
                      f"toolConfig.tools, system and messages); the limit is {MAX_CACHE_POINTS}.")
    if family == "claude":
        shortest = None
        for point in points:
            ttl = point.get("ttl", DEFAULT_CACHE_TTL)
            if shortest is not None and CACHE_TTLS[ttl] > CACHE_TTLS[shortest]:
                raise invalid(MODEL_ERRORS + f"a cache point with ttl '{ttl}' cannot come after "
                              f"one with ttl '{shortest}': longer TTLs must come first "
                              "(toolConfig.tools, then system, then messages).")
            shortest = ttl


def validate_converse(family, body):
    """Validate a Converse/ConverseStream body; returns the plan to answer it with."""
    _closed(body, CONVERSE_FIELDS, "the request body")
    images = check_messages(body.get("messages"), family)
    check_system(body.get("system"), family)
    inference = check_inference(body.get("inferenceConfig"))
    _names, choice = check_tool_config(body.get("toolConfig"), family)
    if _uses_tools(body["messages"]) and body.get("toolConfig") is None:
        raise invalid("The toolConfig field must be defined when using toolUse and "
                      "toolResult content blocks.")
    check_cache_points(body, family)
    paths = check_response_paths(body.get("additionalModelResponseFieldPaths"))
    reasoning = check_model_fields(body, family, inference, choice)
    if reasoning and family == "claude":
        check_thinking_turns(body["messages"])
    return {"images": images, "reasoning": reasoning, "paths": paths}


def model_family(model_id):
    """'claude', 'nova', or a Refusal for an id Bedrock would not know."""
    if "anthropic.claude" in model_id:
        return "claude"
    if "amazon.nova" in model_id:
        return "nova"
    if model_id.startswith("arn:"):
        raise Refusal(404, "ResourceNotFoundException",
                      f"The resource {model_id} was not found.")
    raise invalid("The provided model identifier is invalid.")


def check_auth(headers):
    auth = headers.get("authorization")
    if not auth:
        raise Refusal(403, "AccessDeniedException", "Authorization header is missing")
    if not auth.startswith("AWS4-HMAC-SHA256"):
        raise Refusal(403, "AccessDeniedException", "This endpoint only accepts SigV4-signed "
                      "requests (Authorization: AWS4-HMAC-SHA256 ...).")
    missing = [p for p in ("Credential", "SignedHeaders", "Signature") if p + "=" not in auth]
    if missing:
        raise Refusal(400, "IncompleteSignatureException", " ".join(
            f"Authorization header requires '{p}' parameter." for p in missing))
    if not headers.get("x-amz-date") and not headers.get("date"):
        raise Refusal(400, "IncompleteSignatureException", "Authorization header requires "
                      "existence of either a 'X-Amz-Date' or a 'Date' header.")
    credential = re.search(r"Credential=([^,\s]+)", auth)
    scope = credential.group(1).split("/") if credential else []
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise Refusal(400, "IncompleteSignatureException", "Credential should be of the form "
                      "<key>/<date>/<region>/<service>/aws4_request.")
    if scope[3] != "bedrock":
        raise Refusal(403, "InvalidSignatureException",
                      "Credential should be scoped to correct service: 'bedrock'. ")


# ------------------------------------------------------------------------------- answering

def _result_text(result):
    parts = []
    for block in result.get("content") or []:
        if "text" in block:
            parts.append(block["text"])
        elif "json" in block:
            parts.append(json.dumps(block["json"]))
    return " ".join(parts)


def answer(body, images):
    """(blocks, stop reason, matched stop sequence, output tokens) for a valid request."""
    messages = body["messages"]
    last = messages[-1]
    last_results = [b["toolResult"] for b in last["content"] if "toolResult" in b]
    if body.get("toolConfig") and last["role"] == "user" and not last_results:
        calls = [("tooluse_paris", "get_weather", {"city": "Paris"}),
                 ("tooluse_tokyo", "get_weather", {"city": "Tokyo"})]
        return [{"toolUse": {"toolUseId": tid, "name": name, "input": args}}
                for tid, name, args in calls], "tool_use", None, len(calls)
    if last_results:
        results = [b["toolResult"] for m in messages for b in m["content"] if "toolResult" in b]
        text = "Weather: " + "; ".join(_result_text(r) for r in results)
    elif images:
        data = images[0]
        text = f"image {len(data)} bytes png={'true' if data.startswith(PNG_MAGIC) else 'false'}"
    else:
        text = "Hello from the fake upstream."
    stop, matched = "end_turn", None
    inference = body.get("inferenceConfig") or {}
    for s in inference.get("stopSequences") or []:
        at = text.find(s)
        if at >= 0:
            text, stop, matched = text[:at], "stop_sequence", s
    limit = inference.get("maxTokens")
    words = text.split(" ") if text else []
    if limit and len(words) > limit:
        words = words[:limit]
        text, stop, matched = " ".join(words), "max_tokens", None
    return ([{"text": text}] if text else []), stop, matched, len(words)


def reasoning_block(family):
    text = {"text": "Thinking about it."}
    if family == "claude":
        text["signature"] = "fake-signature"
    return {"reasoningContent": {"reasoningText": text}}


def response_fields(paths, family, matched):
    if family == "claude" and "/stop_sequence" in paths:
        return {"stop_sequence": matched}
    return None


def _words(text):
    return len(text.split()) if isinstance(text, str) else 0


BASE_TOKENS = 3  # every prompt's framing; never part of a cached prefix


def _block_tokens(block):
    """A message block's tokens: its text's words, a toolResult's text words, 100 per image."""
    n = _words(block.get("text")) + (100 if "image" in block else 0)
    if "toolResult" in block:
        for c in block["toolResult"].get("content") or []:
            n += _words(c.get("text")) + (100 if "image" in c else 0)
    return n


def prompt_parts(converse):
    """A (validated) Converse prompt in the order the model reads it: toolConfig.tools, system,
    messages. Yields ("point", <the cachePoint object>) for a cache point, else ("item",
    <JSON-able item: ["tools", tool] | ["system", block] | ["messages", index, role, block]>,
    <its tokens>)."""
    for tool in (converse.get("toolConfig") or {}).get("tools") or []:
        if "cachePoint" in tool:
            yield "point", tool["cachePoint"]
        else:
            yield "item", ["tools", tool], _words((tool.get("toolSpec") or {}).get("description"))
    for block in converse.get("system") or []:
        if "cachePoint" in block:
            yield "point", block["cachePoint"]
        else:
            yield "item", ["system", block], _words(block.get("text"))
    for i, message in enumerate(converse.get("messages") or []):
        for block in message["content"]:
            if "cachePoint" in block:
                yield "point", block["cachePoint"]
            else:
                yield "item", ["messages", i, message["role"], block], _block_tokens(block)


def count_tokens(converse):
    """BASE_TOKENS + the whitespace-separated words of every text (message text blocks,
    toolResult texts, system texts, tool descriptions) + 100 per image; cache points count 0."""
    return BASE_TOKENS + sum(part[2] for part in prompt_parts(converse) if part[0] == "item")


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def cache_usage(model, family, converse):
    """Cache accounting for a valid request; None when it holds no cache point (then usage stays
    the fixed inputTokens=10). Each cache point closes a prefix: its tokens (count_tokens' count
    of the items before it, BASE_TOKENS left out) and its hash (sha256 over the model id then
    the canonical JSON of every item before it, cache points left out). Points under the model's
    minimum are ignored. The last point whose prefix is in CACHE is read; the points after it are
    written (stored with their ttl), their tokens the span from the read prefix to the last
    point, split by the ttl of the point that closes each stretch (cacheDetails)."""
    parts = list(prompt_parts(converse))
    if not any(part[0] == "point" for part in parts):
        if COUNT_INPUT:
            return {"inputTokens": count_tokens(converse), "cacheReadInputTokens": 0,
                    "cacheWriteInputTokens": 0, "cacheDetails": []}
        return None
    digest = hashlib.sha256(_canonical({"modelId": model}))
    tokens, total, points = 0, BASE_TOKENS, []
    for part in parts:
        if part[0] == "item":
            digest.update(b"\n" + _canonical(part[1]))
            tokens += part[2]
            total += part[2]
        else:
            points.append((tokens, digest.copy().hexdigest(),
                           part[1].get("ttl", DEFAULT_CACHE_TTL)))
    eligible = [p for p in points if p[0] >= MIN_CACHE_TOKENS[family]]
    with LOCK:
        now = time.monotonic()
        for key in [k for k, e in CACHE.items() if e["expires"] <= now]:
            del CACHE[key]
        hit = max((n for n, p in enumerate(eligible) if p[1] in CACHE), default=None)
        read = 0
        if hit is not None:
            entry = CACHE[eligible[hit][1]]
            entry["expires"] = now + CACHE_TTLS[entry["ttl"]]  # a hit restarts the countdown
            read = entry["tokens"]
        by_ttl, previous = {}, read
        for n_tokens, key, ttl in eligible[(hit + 1) if hit is not None else 0:]:
            by_ttl[ttl] = by_ttl.get(ttl, 0) + n_tokens - previous
            previous = n_tokens
            CACHE[key] = {"hash": key, "model": model, "tokens": n_tokens, "ttl": ttl,
                          "expires": now + CACHE_TTLS[ttl]}
    write = previous - read
    details = [{"ttl": ttl, "inputTokens": by_ttl[ttl]}
               for ttl in sorted(by_ttl, key=lambda t: -CACHE_TTLS[t]) if by_ttl[ttl]]
    return {"inputTokens": total - read - write, "cacheReadInputTokens": read,
            "cacheWriteInputTokens": write, "cacheDetails": details}


def usage(cache, out):
    """TokenUsage: the fixed inputTokens=10 without cache points (unless --count-input); with
    them, the real split."""
    if cache is None:
        return {"inputTokens": 10, "outputTokens": out, "totalTokens": 10 + out}
    return {"inputTokens": cache["inputTokens"], "outputTokens": out,
            "totalTokens": cache["inputTokens"] + out + cache["cacheReadInputTokens"]
            + cache["cacheWriteInputTokens"],
            "cacheReadInputTokens": cache["cacheReadInputTokens"],
            "cacheWriteInputTokens": cache["cacheWriteInputTokens"],
            "cacheDetails": cache["cacheDetails"]}


# ----------------------------------------------------------------------------------- server

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet: the test output is what matters
        pass

    def _send(self, status, value, extra_headers=()):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for name, val in extra_headers:
            self.send_header(name, val)
        self.end_headers()
        self.wfile.write(data)

    def _refuse(self, refusal):
        key = "Message" if refusal.message == "Authorization header is missing" else "message"
        self._send(refusal.status, {key: refusal.message},
                   [("x-amzn-ErrorType", refusal.kind + ERROR_TYPE_SUFFIX)])

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
        path = self.path.split("?")[0]
        if path == "/_fake/requests":
            with LOCK:
                self._send(200, REQUESTS)
        elif path == "/_fake/cache":
            now = time.monotonic()
            with LOCK:
                self._send(200, [{k: e[k] for k in ("hash", "model", "tokens", "ttl")}
                                 for e in CACHE.values() if e["expires"] > now])
        else:
            self._refuse(Refusal(404, "UnknownOperationException", "Unknown operation"))

    def do_POST(self):
        raw = self._read_body()
        if self.path.split("?")[0] == "/_fake/reset":
            with LOCK:
                REQUESTS.clear()
                CACHE.clear()
            self._send(200, {})
            return
        match = PATH_RE.match(self.path.split("?")[0])
        if not match:
            self._refuse(Refusal(404, "UnknownOperationException", "Unknown operation"))
            return
        model, operation = unquote(match.group(1)), match.group(2)
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        with LOCK:
            REQUESTS.append({"operation": operation, "model": model, "body": body})
        started = time.monotonic()
        try:
            check_auth({k.lower(): v for k, v in self.headers.items()})
            family = model_family(model)
            if not isinstance(body, dict):
                raise invalid("The request body must be a JSON object.")
            if operation == "count-tokens":
                bare = (model.startswith("anthropic.claude")
                        or ":foundation-model/anthropic.claude" in model)
                if family != "claude" or not bare:
                    raise invalid("The provided model doesn't support counting tokens.")
                self._count_tokens(family, body)
                return
            plan = validate_converse(family, body)
            plan["cache"] = cache_usage(model, family, body)
        except Refusal as refusal:
            self._refuse(refusal)
            return
        if operation == "converse":
            self._converse(family, body, plan, started)
        else:
            self._converse_stream(family, body, plan, started)

    def _count_tokens(self, family, body):
        _closed(body, {"input"}, "the request body")
        kind, value = _union(body.get("input"), {"converse", "invokeModel"}, "input")
        if kind == "invokeModel":
            _obj(value, "input.invokeModel")
            _closed(value, {"body"}, "input.invokeModel")
            if not isinstance(value.get("body"), str):
                raise invalid("input.invokeModel.body must be the request body as a string.")
            self._send(200, {"inputTokens": BASE_TOKENS + _words(value["body"])})
            return
        _obj(value, "input.converse")
        _closed(value, COUNT_CONVERSE_FIELDS, "input.converse")
        check_messages(value.get("messages"), family)
        check_system(value.get("system"), family)
        _names, choice = check_tool_config(value.get("toolConfig"), family)
        if _uses_tools(value["messages"]) and value.get("toolConfig") is None:
            raise invalid("The toolConfig field must be defined when using toolUse and "
                          "toolResult content blocks.")
        check_cache_points(value, family)
        check_model_fields(value, family, {}, choice, for_count=True)
        self._send(200, {"inputTokens": count_tokens(value)})

    def _converse(self, family, body, plan, started):
        blocks, stop, matched, out = answer(body, plan["images"])
        if plan["reasoning"]:
            blocks = [reasoning_block(family)] + blocks
        reply = {
            "output": {"message": {"role": "assistant", "content": blocks}},
            "stopReason": stop,
            "usage": usage(plan["cache"], out),
            "metrics": {"latencyMs": int((time.monotonic() - started) * 1000)},
        }
        fields = response_fields(plan["paths"], family, matched)
        if fields is not None:
            reply["additionalModelResponseFields"] = fields
        self._send(200, reply)

    def _converse_stream(self, family, body, plan, started):
        blocks, stop, matched, out = answer(body, plan["images"])
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        self.end_headers()
        sent = [0]

        def send(event_type, payload):
            if sent[0] and GAP_SECONDS:
                time.sleep(GAP_SECONDS)
            payload = dict(payload, p=PADDING[:1 + (sent[0] * 7) % len(PADDING)])
            frame = encode_event(event_type, json.dumps(payload).encode())
            self.wfile.write(b"%x\r\n" % len(frame) + frame + b"\r\n")
            self.wfile.flush()
            sent[0] += 1

        try:
            send("messageStart", {"role": "assistant"})
            index = 0
            if plan["reasoning"]:
                send("contentBlockDelta", {"contentBlockIndex": index, "delta": {
                    "reasoningContent": {"text": "Thinking about it."}}})
                if family == "claude":
                    send("contentBlockDelta", {"contentBlockIndex": index, "delta": {
                        "reasoningContent": {"signature": "fake-signature"}}})
                send("contentBlockStop", {"contentBlockIndex": index})
                index += 1
            for block in blocks:
                if "toolUse" in block:
                    use = block["toolUse"]
                    args = json.dumps(use["input"])
                    half = len(args) // 2
                    send("contentBlockStart", {"contentBlockIndex": index, "start": {
                        "toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}})
                    for part in (args[:half], args[half:]):
                        send("contentBlockDelta", {"contentBlockIndex": index,
                                                   "delta": {"toolUse": {"input": part}}})
                else:
                    for i, word in enumerate(block["text"].split(" ")):
                        send("contentBlockDelta", {"contentBlockIndex": index, "delta": {
                            "text": word if i == 0 else " " + word}})
                send("contentBlockStop", {"contentBlockIndex": index})
                index += 1
            stop_event = {"stopReason": stop}
            fields = response_fields(plan["paths"], family, matched)
            if fields is not None:
                stop_event["additionalModelResponseFields"] = fields
            send("messageStop", stop_event)
            send("metadata", {
                "usage": usage(plan["cache"], out),
                "metrics": {"latencyMs": int((time.monotonic() - started) * 1000)}})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the reader went away: stop generating


def self_test():
    payload = json.dumps({"contentBlockIndex": 0, "delta": {"text": "Hello"}}).encode()
    frame = encode_event("contentBlockDelta", payload)
    headers, body, rest = decode_event(frame + frame)
    assert headers == {":event-type": "contentBlockDelta", ":content-type": "application/json",
                       ":message-type": "event"}, headers
    assert body == payload and rest == frame, (body, rest)
    assert struct.unpack(">I", frame[:4])[0] == len(frame)
    broken = frame[:-1] + bytes([frame[-1] ^ 1])
    try:
        decode_event(broken)
        raise AssertionError("a corrupted message CRC was accepted")
    except ValueError:
        pass
    broken = frame[:9] + bytes([frame[9] ^ 1]) + frame[10:]
    try:
        decode_event(broken)
        raise AssertionError("a corrupted prelude CRC was accepted")
    except ValueError:
        pass
    self_test_caching()
    print("self-test ok: event-stream encode/decode, prelude and message CRCs verified; "
          "cache point validation and cache accounting")


def self_test_caching():
    claude, nova = "anthropic.claude-3-7-sonnet-20250219-v1:0", "amazon.nova-pro-v1:0"
    point, hour = {"cachePoint": {"type": "default"}}, {"cachePoint": {"type": "default",
                                                                       "ttl": "1h"}}
    rules = " ".join(["word"] * 1100)
    tool = {"toolSpec": {"name": "get_weather", "description": "The weather in a city.",
                         "inputSchema": {"json": {"type": "object"}}}}

    def body(question="hi", system_point=point, last_point=point, tools=None):
        b = {"system": [{"text": rules}] + ([system_point] if system_point else []),
             "messages": [{"role": "user", "content": [{"text": question}]
                           + ([last_point] if last_point else [])}]}
        if tools:
            b["toolConfig"] = {"tools": tools}
        return b

    def run(family, b, model=claude):
        validate_converse(family, b)
        return usage(cache_usage(model, family, b), 5)

    def refused(family, b, needle):
        try:
            validate_converse(family, b)
        except Refusal as r:
            assert r.status == 400 and r.kind == "ValidationException", (r.status, r.kind)
            assert needle in r.message, (needle, r.message)
            return
        raise AssertionError(f"accepted: {json.dumps(b)[:200]}")

    saved = dict(CACHE)
    CACHE.clear()
    try:
        # No cache point: the fixed usage, nothing stored.
        assert run("claude", body(system_point=None, last_point=None)) == {
            "inputTokens": 10, "outputTokens": 5, "totalTokens": 15}, "no cache points"
        assert not CACHE
        # First call writes both prefixes (1,100 system words, then +1 for "hi").
        u = run("claude", body())
        assert u == {"inputTokens": 3, "outputTokens": 5, "totalTokens": 1109,
                     "cacheReadInputTokens": 0, "cacheWriteInputTokens": 1101,
                     "cacheDetails": [{"ttl": "5m", "inputTokens": 1101}]}, u
        assert sorted(e["tokens"] for e in CACHE.values()) == [1100, 1101], CACHE
        # The same request reads it all back.
        u = run("claude", body())
        assert (u["cacheReadInputTokens"], u["cacheWriteInputTokens"], u["inputTokens"],
                u["cacheDetails"]) == (1101, 0, 3, []), u
        # Another question: the system prefix is read, the new tail written.
        u = run("claude", body("what now"))
        assert (u["cacheReadInputTokens"], u["cacheWriteInputTokens"], u["inputTokens"]) == \
            (1100, 2, 3), u
        # Another model id: another cache.
        assert run("claude", body(), model="anthropic.claude-3-5-haiku-20241022-v1:0")[
            "cacheReadInputTokens"] == 0
        # Under the minimum: ignored, all tokens plain input; CountTokens counts points as 0.
        short = {"system": [{"text": "Be brief."}, point],
                 "messages": [{"role": "user", "content": [{"text": "hi"}, point]}]}
        u = run("claude", short)
        assert (u["inputTokens"], u["cacheReadInputTokens"], u["cacheWriteInputTokens"]) == \
            (6, 0, 0), u
        assert count_tokens(short) == count_tokens(
            {"system": [{"text": "Be brief."}], "messages": [
                {"role": "user", "content": [{"text": "hi"}]}]}) == 6
        # cacheDetails by TTL, 1h first; tools (under the minimum alone) in the prefix.
        CACHE.clear()
        u = run("claude", body(system_point=hour, tools=[tool, hour]))
        assert u["cacheDetails"] == [{"ttl": "1h", "inputTokens": 1105},
                                     {"ttl": "5m", "inputTokens": 1}], u
        assert sorted(e["ttl"] for e in CACHE.values()) == ["1h", "5m"], CACHE
        # Nova: points in system and messages; none in tools.
        u = run("nova", body(), model=nova)
        assert u["cacheWriteInputTokens"] == 1101, u
        refused("nova", body(tools=[tool, point]), "cache points in tools")
        # Refusals.
        refused("claude", body(last_point={"cachePoint": {"type": "default", "x": 1}}),
                "Unknown member 'x'")
        refused("claude", body(last_point={"cachePoint": {"type": "ephemeral"}}),
                "enum value set: [default]")
        refused("claude", body(last_point={"cachePoint": {}}), "enum value set: [default]")
        refused("claude", body(last_point={"cachePoint": {"type": "default", "ttl": "10m"}}),
                "messages.1.member.content.2.member.cachePoint.ttl")
        refused("claude", {"system": [point, {"text": rules}],
                           "messages": [{"role": "user", "content": [{"text": "hi"}]}]},
                "first block")
        refused("claude", body(tools=[point, tool]), "first block")
        many = body(tools=[tool, point])
        many["messages"][0]["content"] = [{"text": "a"}, point, {"text": "b"}, point,
                                          {"text": "c"}, point]
        refused("claude", many, "the limit is 4")
        refused("claude", body(last_point=hour), "longer TTLs must come first")
        result = {"role": "user", "content": [{"toolResult": {
            "toolUseId": "t1", "content": [{"text": "sunny"}, point]}}]}
        refused("claude", {"toolConfig": {"tools": [tool]}, "messages": [
            {"role": "user", "content": [{"text": "weather?"}]},
            {"role": "assistant", "content": [{"toolUse": {
                "toolUseId": "t1", "name": "get_weather", "input": {}}}]}, result]},
            "Unknown member 'cachePoint'")
        refused("claude", dict(body(), inferenceConfig={"maxTokens": 5, "cachePoint": {
            "type": "default"}}), "Unknown member 'cachePoint'")
        # Points in an assistant message are accepted.
        two = body(last_point=None)
        two["messages"] += [{"role": "assistant", "content": [{"text": "Hello."}, point]},
                            {"role": "user", "content": [{"text": "More."}]}]
        validate_converse("claude", two)
    finally:
        CACHE.clear()
        CACHE.update(saved)


def main():
    global GAP_SECONDS, COUNT_INPUT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--gap-ms", type=int, default=0)
    parser.add_argument("--count-input", action="store_true",
                        help="report a request without cache points at its real count, not inputTokens=10")
    args = parser.parse_args()
    GAP_SECONDS = args.gap_ms / 1000
    COUNT_INPUT = args.count_input
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"FAKE_CONVERSE_URL=http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if "--self-test" in sys.argv:
    self_test()
    sys.exit(0)

if __name__ == "__main__":
    main()
