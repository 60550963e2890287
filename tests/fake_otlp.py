"""FakeOtlpCollector: a fake OpenTelemetry collector for the Python suites. It receives OTLP/HTTP
protobuf on `POST /v1/traces` (as a real collector does), decodes each request with the
`opentelemetry-proto` package and keeps the spans as plain dicts for assertions. It answers an
empty ExportTraceServiceResponse, as a real collector does on success.
"""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def _value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class FakeOtlpCollector:
    """A fake collector on 127.0.0.1 (`port` 0: any free port). `url` is the base URL to give
    as OTEL_EXPORTER_OTLP_ENDPOINT."""

    def __init__(self, port: int = 0):
        self.spans = []
        self.requests = []  # (path, content-type, headers) of every request received
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with collector._lock:
                    collector.requests.append((self.path, self.headers.get("content-type"), dict(self.headers)))
                if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                decoded = []
                for rs in request.resource_spans:
                    resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            decoded.append({
                                "trace_id": s.trace_id.hex(),
                                "span_id": s.span_id.hex(),
                                "parent_span_id": s.parent_span_id.hex(),
                                "name": s.name,
                                "kind": s.kind,
                                "start": s.start_time_unix_nano,
                                "end": s.end_time_unix_nano,
                                "status": s.status.code,
                                "attributes": {kv.key: _value(kv.value) for kv in s.attributes},
                                "events": [e.name for e in s.events],
                                "resource": resource,
                            })
                with collector._lock:
                    collector.spans.extend(decoded)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def received(self) -> list:
        with self._lock:
            return list(self.spans)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
