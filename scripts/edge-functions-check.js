// Runs the front door's edge functions from infra/template.yaml, extracted by
// scripts/infra-check.sh: the payload-hash Lambda@Edge function (PayloadHashFunction, argv[2]) on
// origin-request events, and the CloudFront function relaying Authorization
// (RelayAuthorizationFunction, argv[3]) on viewer-request events; checks what they hand
// CloudFront. Node only, no AWS.
'use strict';
const assert = require('assert');
const crypto = require('crypto');
const { handler } = require(process.argv[2]);

function event(body, method = 'POST') {
  return {
    Records: [{ cf: { request: {
      method, uri: '/v1/chat/completions', querystring: '',
      headers: { 'content-type': [{ key: 'Content-Type', value: 'application/json' }] },
      body,
    } } }],
  };
}

(async () => {
  const json = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'héllo' }] });
  const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');

  // CloudFront hands the body base64-encoded; the hash is over the raw bytes.
  let out = await handler(event({ inputTruncated: false, action: 'read-only', encoding: 'base64',
    data: Buffer.from(json, 'utf8').toString('base64') }));
  assert.strictEqual(out.headers['x-amz-content-sha256'][0].value, sha(Buffer.from(json, 'utf8')));
  assert.strictEqual(out.uri, '/v1/chat/completions', 'the request goes on unchanged');
  assert.strictEqual(out.headers['content-type'][0].value, 'application/json');

  // A text body.
  out = await handler(event({ inputTruncated: false, encoding: 'text', data: json }));
  assert.strictEqual(out.headers['x-amz-content-sha256'][0].value, sha(Buffer.from(json, 'utf8')));

  // No body (a GET through the behaviour): the hash of nothing.
  out = await handler(event(undefined, 'GET'));
  assert.strictEqual(out.headers['x-amz-content-sha256'][0].value, sha(Buffer.alloc(0)));

  // A body CloudFront cut at its limit cannot be signed: refused with the OpenAI envelope.
  out = await handler(event({ inputTruncated: true, encoding: 'base64', data: 'AAAA' }));
  assert.strictEqual(out.status, '413');
  const envelope = JSON.parse(out.body);
  assert.strictEqual(envelope.error.code, 'payload_too_large');
  assert.strictEqual(envelope.error.type, 'invalid_request_error');

  // The relay (cloudfront-js-2.0 declares a top-level `handler`).
  const fs = require('fs');
  const relay = new Function(fs.readFileSync(process.argv[3], 'utf8') + '\nreturn handler;')();
  const viewer = (headers) => ({ version: '1.0', request: { method: 'GET', uri: '/v1/models', headers } });
  let req = relay(viewer({ authorization: { value: 'Bearer rgk_caller' }, 'idempotency-key': { value: 'k1' } }));
  assert.strictEqual(req.headers['x-reelgate-authorization'].value, 'Bearer rgk_caller');
  assert.strictEqual(req.headers['idempotency-key'].value, 'k1', 'other headers pass unchanged');
  // A caller's own relay header never reaches the origin: replaced, or dropped without a key.
  req = relay(viewer({ authorization: { value: 'Bearer real' }, 'x-reelgate-authorization': { value: 'Bearer forged' } }));
  assert.strictEqual(req.headers['x-reelgate-authorization'].value, 'Bearer real');
  req = relay(viewer({ 'x-reelgate-authorization': { value: 'Bearer forged' } }));
  assert.strictEqual(req.headers['x-reelgate-authorization'], undefined);

  console.log('edge-functions-check: ok');
})().catch((e) => { console.error(e); process.exit(1); });
