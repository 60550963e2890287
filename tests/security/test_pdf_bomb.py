"""Issue #30, item 1: PDF rasterization cannot take the server down. The real server gets, as a
/v1/responses input_file, a ~1 MB PDF whose content stream inflates to 1 GiB and a PDF whose
image XObject declares 16000 x 16000 pixels. Each must be a quick 400 naming the parameter, and
the server's peak RSS (VmHWM, /proc/<pid>/status) must stay under the bound docs/security.md
states (section "PDF rasterization"); a normal PDF must still reach the model as page images."""

import base64
import tempfile
import time
import zlib

import httpx
import pytest

from conftest import auth, start_server
from harness import peak_rss_kib

# docs/security.md: the local server's peak RSS under these documents.
RSS_BOUND_MIB = 256
# A refusal must come well before the renderer's wall-clock limit (20 s).
ANSWER_WITHIN_S = 15
MIB = 1 << 20


@pytest.fixture()
def pdf_server(upstream):
    """A fresh server per test: VmHWM is a high-water mark, so each attack is measured alone."""
    with tempfile.TemporaryDirectory() as data_dir:
        srv = start_server(
            data_dir,
            env={
                "REELGATE_UPSTREAM_BASE_URL": upstream.url,
                "REELGATE_UPSTREAM_CAPABILITIES": "text,tools,vision",
                "REELGATE_LOG": "warn",
            },
        )
        try:
            yield srv
        finally:
            srv.stop()


def pdf_of(objects):
    """A PDF of the given object bodies (bytes), object 1 the catalog; offsets are computed."""
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects):
        offsets.append(len(out))
        out += f"{i + 1} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def stream(dict_body: str, data: bytes) -> bytes:
    return f"<< {dict_body} /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


def page_with(content: bytes, resources: str = "") -> list:
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R {resources} >>".encode(),
        stream("/Filter /FlateDecode", zlib.compress(content)),
    ]


def inflation_bomb(gib=1):
    """A page whose content stream is zlib of `gib` GiB of zeros (about 1 MB per GiB)."""
    z = zlib.compressobj(9)
    chunk = bytes(MIB)
    data = b"".join(z.compress(chunk) for _ in range(gib * 1024)) + z.flush()
    objects = page_with(b"")
    objects[3] = stream("/Filter /FlateDecode", data)
    return pdf_of(objects)


def zlib_zeros(n):
    z = zlib.compressobj(9)
    chunk = bytes(MIB)
    out = [z.compress(chunk) for _ in range(n // MIB)]
    return b"".join(out) + z.compress(bytes(n % MIB)) + z.flush()


def huge_image(side=16000, width_by_reference=False):
    """A page drawing one 1-bit grey image XObject of side x side pixels (16000: 256 Mpx in
    32 MB of samples, under the per-stream cap; a renderer expands them to 4 bytes a pixel),
    its samples all present and compressed to ~30 KB."""
    objects = page_with(b"q 500 0 0 500 50 50 cm /Im1 Do Q", "/Resources << /XObject << /Im1 5 0 R >> >>")
    objects.append(
        stream(
            f"/Type /XObject /Subtype /Image /Width {'6 0 R' if width_by_reference else side} "
            f"/Height {side} /ColorSpace /DeviceGray "
            "/BitsPerComponent 1 /Filter /FlateDecode",
            zlib_zeros(side * side // 8),
        )
    )
    if width_by_reference:
        objects.append(str(side).encode())
    return pdf_of(objects)


def normal_pdf():
    return pdf_of(page_with(b"0 0 1 rg 10 10 300 300 re f"))


def send(srv, pdf: bytes):
    b64 = base64.b64encode(pdf).decode()
    body = {
        "model": "fake-model-v1",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Summarize this."},
                    {"type": "input_file", "filename": "doc.pdf", "file_data": f"data:application/pdf;base64,{b64}"},
                ],
            }
        ],
    }
    started = time.time()
    try:
        r = httpx.post(f"{srv.base_url}/v1/responses", headers=auth(srv.api_key), json=body, timeout=120)
    except httpx.HTTPError as e:
        r = e  # the server died or hung up: reported by the assertions below
    return r, time.time() - started


def rss_mib(srv):
    return peak_rss_kib(srv.proc.pid) / 1024


def assert_refused_quickly(srv, pdf, words, within_s=ANSWER_WITHIN_S, may_render=False):
    """The server answers within `within_s` with its RSS bounded: a 400 naming `file_data` whose
    message has one of `words`, or, with `may_render`, the rendered page (the renderer finished
    within its own limits)."""
    before = rss_mib(srv)
    r, took = send(srv, pdf)
    assert srv.proc.poll() is None, "the server died"
    peak = rss_mib(srv)
    print(f"\npdf of {len(pdf) / MIB:.2f} MiB: answered {getattr(r, 'status_code', r)} in {took:.2f} s, "
          f"peak RSS {before:.0f} -> {peak:.0f} MiB")
    assert isinstance(r, httpx.Response), f"no answer: {r!r}"
    if may_render and r.status_code == 200:
        assert r.json()["status"] == "completed", r.text[:500]
        assert took < within_s, took
        assert peak < RSS_BOUND_MIB, f"peak RSS {peak:.0f} MiB"
        return
    assert r.status_code == 400, r.text[:500]
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error", err
    assert err["param"] == "file_data", err
    assert any(w in err["message"] for w in words), err["message"]
    # Nothing of the renderer's insides reaches the caller.
    for leak in ("hayro", "panicked", "signal", "/proc", "SIGKILL", "rlimit"):
        assert leak not in err["message"], err["message"]
    assert took < within_s, took
    assert peak < RSS_BOUND_MIB, f"peak RSS {peak:.0f} MiB"


def test_a_stream_inflating_to_a_gibibyte_is_refused_in_bounded_memory(pdf_server):
    pdf = inflation_bomb()
    assert len(pdf) < 2 * MIB
    assert_refused_quickly(pdf_server, pdf, ["decompress", "bytes"])


def test_an_image_declaring_huge_dimensions_is_refused_in_bounded_memory(pdf_server):
    assert_refused_quickly(pdf_server, huge_image(), ["pixels"])


def test_a_document_the_prescan_cannot_judge_is_stopped_by_the_renderers_limits(pdf_server):
    """The image's width is an indirect object, which the pre-scan leaves to the renderer: 22000 x
    22000 1-bit pixels (60 MB of samples, under the stream cap). Whether the renderer's process
    (1 GiB of address space, 20 s) gives out or finishes depends on the machine's speed (it
    downsamples the image); either way the server survives in bounded memory and answers by the
    time limit — a 400 "too complex" or the rendered page."""
    pdf = huge_image(side=22000, width_by_reference=True)
    assert_refused_quickly(pdf_server, pdf, ["too complex"], within_s=25, may_render=True)


def test_a_normal_pdf_still_reaches_the_model_as_a_page_image(pdf_server, upstream):
    r, took = send(pdf_server, normal_pdf())
    assert isinstance(r, httpx.Response) and r.status_code == 200, getattr(r, "text", r)
    assert r.json()["status"] == "completed"
    print(f"\nnormal pdf answered in {took:.2f} s, peak RSS {rss_mib(pdf_server):.0f} MiB")
    assert rss_mib(pdf_server) < RSS_BOUND_MIB
