"""FakeOidcIssuer: a fake OpenID Connect issuer for the console's sign-in tests. It is a real
HTTP server on 127.0.0.1 that serves a discovery document, a JWKS and the authorization and token
endpoints of the authorization-code flow, and signs real RS256 ID tokens (PyJWT with
cryptography) for whichever user the test says is signed in at it.

It checks what a real issuer checks of the relying party: the client id and redirect URI, the
code used once, and PKCE (S256: the verifier sent to the token endpoint must hash to the challenge
sent to the authorization endpoint). Tests can make it misbehave like a hostile or broken issuer:
sign with a key it does not publish, send claims of their choosing, rotate its keys.
"""

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _new_key(kid: str):
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    numbers = private.public_key().public_numbers()
    jwk = {
        "kty": "RSA",
        "use": "sig",
        "alg": "RS256",
        "kid": kid,
        "n": _b64url(numbers.n.to_bytes((numbers.n.bit_length() + 7) // 8, "big")),
        "e": _b64url(numbers.e.to_bytes(3, "big")),
    }
    return private, jwk


class FakeOidcIssuer:
    """A fake issuer (see the module's docstring). `user` is who is signed in at it."""

    def __init__(self, client_id: str = "reelgate-console", client_secret: str = None):
        self.client_id = client_id
        self.client_secret = client_secret
        self.key, self.jwk = _new_key("key-1")
        self.published = [self.jwk]
        # A key the issuer never publishes: what a forger signs with.
        self.forger_key, _ = _new_key("key-1")
        self.user = {"sub": "sub-unset", "email": "nobody@example.test", "email_verified": True}
        # Claim overrides for the next tokens (None removes a claim), and who signs them.
        self.overrides = {}
        self.sign_with_forger = False
        self.authorize_requests = []
        self.token_requests = []
        self.jwks_fetches = 0
        self._codes = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.issuer = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def reset(self, user: dict):
        """Signs `user` in at the issuer and forgets any misbehaviour."""
        self.user = dict(user)
        self.overrides = {}
        self.sign_with_forger = False

    def rotate_key(self, keep_old: bool = False):
        """Signs with a new key (new kid) from now on; publishes it (and the old one if kept)."""
        kid = f"key-{len(self.published) + 2}-{secrets.token_hex(2)}"
        self.key, self.jwk = _new_key(kid)
        self.published = (self.published if keep_old else []) + [self.jwk]

    def stop(self):
        self._server.shutdown()
        self._server.server_close()

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            **self.user,
        }
        for name, value in self.overrides.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        key = self.forger_key if self.sign_with_forger else self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.jwk["kid"]})

    def _handler(self):
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urlparse(self.path)
                if url.path == "/.well-known/openid-configuration":
                    return self._json(200, {
                        "issuer": issuer.issuer,
                        "authorization_endpoint": f"{issuer.issuer}/authorize",
                        "token_endpoint": f"{issuer.issuer}/token",
                        "jwks_uri": f"{issuer.issuer}/jwks",
                        "response_types_supported": ["code"],
                        "subject_types_supported": ["public"],
                        "id_token_signing_alg_values_supported": ["RS256"],
                        "code_challenge_methods_supported": ["S256"],
                    })
                if url.path == "/jwks":
                    issuer.jwks_fetches += 1
                    return self._json(200, {"keys": issuer.published})
                if url.path == "/authorize":
                    q = {k: v[0] for k, v in parse_qs(url.query).items()}
                    issuer.authorize_requests.append(q)
                    if q.get("client_id") != issuer.client_id or q.get("response_type") != "code":
                        return self._json(400, {"error": "invalid_request"})
                    code = secrets.token_urlsafe(16)
                    with issuer._lock:
                        issuer._codes[code] = q
                    target = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                return self._json(404, {"error": "not_found"})

            def do_POST(self):
                url = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                issuer.token_requests.append({"form": form, "authorization": self.headers.get("Authorization")})
                if url.path != "/token":
                    return self._json(404, {"error": "not_found"})
                if issuer.client_secret is not None:
                    expected = "Basic " + base64.b64encode(f"{issuer.client_id}:{issuer.client_secret}".encode()).decode()
                    if self.headers.get("Authorization") != expected:
                        return self._json(401, {"error": "invalid_client"})
                with issuer._lock:
                    request = issuer._codes.pop(form.get("code", ""), None)
                if request is None or form.get("grant_type") != "authorization_code":
                    return self._json(400, {"error": "invalid_grant"})
                if form.get("redirect_uri") != request.get("redirect_uri") or form.get("client_id") != issuer.client_id:
                    return self._json(400, {"error": "invalid_grant"})
                verifier = form.get("code_verifier", "")
                challenge = _b64url(hashlib.sha256(verifier.encode()).digest())
                if request.get("code_challenge_method") != "S256" or challenge != request.get("code_challenge"):
                    return self._json(400, {"error": "invalid_grant", "error_description": "PKCE"})
                return self._json(200, {
                    "access_token": secrets.token_urlsafe(16),
                    "token_type": "Bearer",
                    "expires_in": 300,
                    "id_token": issuer.id_token(request.get("nonce", "")),
                })

        return Handler
