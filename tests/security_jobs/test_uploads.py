"""What was checked is what is used: once a direct upload is completed, its URL can no longer
change the file's bytes, size or type."""

import httpx

from conftest import png_bytes


def test_a_put_after_complete_does_not_change_the_file(tenant):
    original = png_bytes(16, 16)
    r = httpx.post(
        tenant.url("/v1/uploads"),
        headers=tenant.headers,
        json={"purpose": "vision", "filename": "frame.png", "bytes": len(original), "mime_type": "image/png"},
    )
    assert r.status_code == 200, r.text
    upload = r.json()
    put = httpx.put(upload["upload_url"], headers=upload["upload_headers"], content=original)
    assert put.status_code in (200, 201, 204), put.text
    done = httpx.post(tenant.url(f"/v1/uploads/{upload['id']}/complete"), headers=tenant.headers)
    assert done.status_code == 200, done.text
    file = done.json()
    assert file["bytes"] == len(original)

    # The URL is still within its lifetime: whatever it accepts now must not reach the file.
    swapped = b"#!/bin/sh\necho not a png\n" + b"\x00" * (len(original) - 25)
    assert len(swapped) == len(original)
    httpx.put(upload["upload_url"], headers=upload["upload_headers"], content=swapped)
    bigger = png_bytes(64, 64)
    httpx.put(upload["upload_url"], headers=upload["upload_headers"], content=bigger)

    content = httpx.get(tenant.url(f"/v1/files/{file['id']}/content"), headers=tenant.headers)
    assert content.status_code == 200
    assert content.content == original
    shown = httpx.get(tenant.url(f"/v1/files/{file['id']}"), headers=tenant.headers).json()
    assert shown["bytes"] == len(original)
    # Completing again answers the same, unchanged file.
    again = httpx.post(tenant.url(f"/v1/uploads/{upload['id']}/complete"), headers=tenant.headers)
    assert again.status_code == 200 and again.json()["id"] == file["id"]
    assert httpx.get(tenant.url(f"/v1/files/{file['id']}/content"), headers=tenant.headers).content == original


def test_the_recorded_size_is_the_stored_objects(tenant):
    data = png_bytes(8, 8)
    r = httpx.post(
        tenant.url("/v1/uploads"),
        headers=tenant.headers,
        json={"purpose": "vision", "filename": "f.png", "bytes": len(data) + 10, "mime_type": "image/png"},
    )
    upload = r.json()
    httpx.put(upload["upload_url"], headers=upload["upload_headers"], content=data)
    done = httpx.post(tenant.url(f"/v1/uploads/{upload['id']}/complete"), headers=tenant.headers)
    assert done.status_code == 400, done.text
    assert done.json()["error"]["param"] == "bytes"
