//! Post-processing of the `mp4` crate's output: moves `moov` in front of
//! `mdat` (fast start, so players and probes need only the head of the file)
//! and adds an edit list that hides the AAC encoder delay.

use crate::error::MediaError;

/// Edit list for one track: skip `media_time` (media timescale) and present
/// `duration` (movie timescale).
pub(crate) struct AudioEdit {
    pub track_id: u32,
    pub media_time: u64,
    pub duration: u64,
}

#[derive(Clone, Copy)]
pub(crate) struct RawBox {
    pub kind: [u8; 4],
    pub start: usize,
    /// Start of the payload (after the header).
    pub body: usize,
    pub end: usize,
}

fn bad(m: impl Into<String>) -> MediaError {
    MediaError::Mux(m.into())
}

/// Splits `data` into the boxes it holds, in order.
pub(crate) fn boxes(data: &[u8]) -> Result<Vec<RawBox>, MediaError> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        if data.len() - pos < 8 {
            return Err(bad("truncated box header"));
        }
        let size32 = u32::from_be_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]);
        let kind = [data[pos + 4], data[pos + 5], data[pos + 6], data[pos + 7]];
        let (size, header) = match size32 {
            0 => (data.len() - pos, 8),
            1 => {
                if data.len() - pos < 16 {
                    return Err(bad("truncated large box header"));
                }
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos + 8..pos + 16]);
                (
                    usize::try_from(u64::from_be_bytes(b)).map_err(|_| bad("box too large"))?,
                    16,
                )
            }
            n => (n as usize, 8),
        };
        if size < header || size > data.len() - pos {
            return Err(bad(format!(
                "box {} has an invalid size",
                String::from_utf8_lossy(&kind)
            )));
        }
        out.push(RawBox {
            kind,
            start: pos,
            body: pos + header,
            end: pos + size,
        });
        pos += size;
    }
    Ok(out)
}

fn put_box(out: &mut Vec<u8>, kind: &[u8; 4], payload: &[u8]) -> Result<(), MediaError> {
    let size = u32::try_from(payload.len() + 8).map_err(|_| bad("box too large"))?;
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(payload);
    Ok(())
}

fn read_u32(b: &[u8], at: usize) -> Result<u32, MediaError> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad("truncated field"))
}

fn write_duration(
    payload: &mut [u8],
    v0_at: usize,
    v1_at: usize,
    value: u64,
) -> Result<(), MediaError> {
    let version = *payload.first().ok_or_else(|| bad("empty full box"))?;
    if version == 1 {
        let slot = payload
            .get_mut(v1_at..v1_at + 8)
            .ok_or_else(|| bad("truncated box"))?;
        slot.copy_from_slice(&value.to_be_bytes());
    } else {
        let v = u32::try_from(value).map_err(|_| bad("duration does not fit a version 0 box"))?;
        let slot = payload
            .get_mut(v0_at..v0_at + 4)
            .ok_or_else(|| bad("truncated box"))?;
        slot.copy_from_slice(&v.to_be_bytes());
    }
    Ok(())
}

struct Ctx<'a> {
    shift: i64,
    edit: Option<&'a AudioEdit>,
}

/// Rewrites a container's children: chunk offsets shifted, edit list added.
fn rewrite_children(payload: &[u8], ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Result<(), MediaError> {
    for b in boxes(payload)? {
        let body = &payload[b.body..b.end];
        match &b.kind {
            b"trak" => {
                let mut inner = Vec::with_capacity(body.len() + 64);
                let children = boxes(body)?;
                let mut track_id = None;
                for c in &children {
                    let cbody = &body[c.body..c.end];
                    match &c.kind {
                        b"tkhd" => {
                            let version = *cbody.first().ok_or_else(|| bad("empty tkhd"))?;
                            let id = read_u32(cbody, if version == 1 { 20 } else { 12 })?;
                            track_id = Some(id);
                            let mut tkhd = cbody.to_vec();
                            let edit = ctx.edit.filter(|e| e.track_id == id);
                            if let Some(e) = edit {
                                write_duration(&mut tkhd, 20, 28, e.duration)?;
                            }
                            put_box(&mut inner, b"tkhd", &tkhd)?;
                            if let Some(e) = edit {
                                inner.extend_from_slice(&edts(e)?);
                            }
                        }
                        b"edts" if ctx.edit.is_some_and(|e| Some(e.track_id) == track_id) => {
                            // Replaced by ours.
                        }
                        b"mdia" | b"minf" | b"stbl" => {
                            let mut sub = Vec::with_capacity(cbody.len());
                            rewrite_children(cbody, ctx, &mut sub)?;
                            put_box(&mut inner, &c.kind, &sub)?;
                        }
                        _ => inner.extend_from_slice(&body[c.start..c.end]),
                    }
                }
                put_box(out, b"trak", &inner)?;
            }
            b"mdia" | b"minf" | b"stbl" => {
                let mut sub = Vec::with_capacity(body.len());
                rewrite_children(body, ctx, &mut sub)?;
                put_box(out, &b.kind, &sub)?;
            }
            b"stco" => {
                let mut p = body.to_vec();
                let count = read_u32(&p, 4)? as usize;
                if p.len() < 8 + count * 4 {
                    return Err(bad("truncated stco"));
                }
                for i in 0..count {
                    let at = 8 + i * 4;
                    let v = i64::from(read_u32(&p, at)?) + ctx.shift;
                    let v = u32::try_from(v)
                        .map_err(|_| bad("chunk offset out of range after moving moov"))?;
                    p[at..at + 4].copy_from_slice(&v.to_be_bytes());
                }
                put_box(out, b"stco", &p)?;
            }
            b"co64" => {
                let mut p = body.to_vec();
                let count = read_u32(&p, 4)? as usize;
                if p.len() < 8 + count * 8 {
                    return Err(bad("truncated co64"));
                }
                for i in 0..count {
                    let at = 8 + i * 8;
                    let mut raw = [0u8; 8];
                    raw.copy_from_slice(&p[at..at + 8]);
                    let v = (u64::from_be_bytes(raw) as i64 + ctx.shift) as u64;
                    p[at..at + 8].copy_from_slice(&v.to_be_bytes());
                }
                put_box(out, b"co64", &p)?;
            }
            _ => out.extend_from_slice(&payload[b.start..b.end]),
        }
    }
    Ok(())
}

fn edts(e: &AudioEdit) -> Result<Vec<u8>, MediaError> {
    let mut elst = Vec::with_capacity(28);
    elst.extend_from_slice(&[0, 0, 0, 0]); // version 0, flags 0
    elst.extend_from_slice(&1u32.to_be_bytes());
    elst.extend_from_slice(
        &u32::try_from(e.duration)
            .map_err(|_| bad("edit too long"))?
            .to_be_bytes(),
    );
    elst.extend_from_slice(
        &u32::try_from(e.media_time)
            .map_err(|_| bad("edit offset too large"))?
            .to_be_bytes(),
    );
    elst.extend_from_slice(&0x0001_0000u32.to_be_bytes()); // rate 1.0
    let mut inner = Vec::new();
    put_box(&mut inner, b"elst", &elst)?;
    let mut out = Vec::new();
    put_box(&mut out, b"edts", &inner)?;
    Ok(out)
}

fn rewrite_moov(moov_body: &[u8], ctx: &Ctx<'_>) -> Result<Vec<u8>, MediaError> {
    let mut payload = Vec::with_capacity(moov_body.len() + 64);
    rewrite_children(moov_body, ctx, &mut payload)?;
    // The movie lasts as long as its longest track header says.
    let children = boxes(&payload)?;
    let mut longest = 0u64;
    for c in children.iter().filter(|c| &c.kind == b"trak") {
        for t in boxes(&payload[c.body..c.end])?
            .iter()
            .filter(|t| &t.kind == b"tkhd")
        {
            let tkhd = &payload[c.body + t.body..c.body + t.end];
            let d = if tkhd.first() == Some(&1) {
                let mut raw = [0u8; 8];
                raw.copy_from_slice(tkhd.get(28..36).ok_or_else(|| bad("truncated tkhd"))?);
                u64::from_be_bytes(raw)
            } else {
                u64::from(read_u32(tkhd, 20)?)
            };
            longest = longest.max(d);
        }
    }
    if let Some(mvhd) = children.iter().find(|c| &c.kind == b"mvhd") {
        let (body, end) = (mvhd.body, mvhd.end);
        write_duration(&mut payload[body..end], 16, 24, longest)?;
    }
    let mut out = Vec::with_capacity(payload.len() + 8);
    put_box(&mut out, b"moov", &payload)?;
    Ok(out)
}

/// Returns the file with `moov` right after `ftyp` and the optional edit list applied.
pub(crate) fn finalize(file: &[u8], edit: Option<AudioEdit>) -> Result<Vec<u8>, MediaError> {
    let top = boxes(file)?;
    let moov = *top
        .iter()
        .find(|b| &b.kind == b"moov")
        .ok_or_else(|| bad("no moov box"))?;
    let mdat = *top
        .iter()
        .find(|b| &b.kind == b"mdat")
        .ok_or_else(|| bad("no mdat box"))?;
    if top.iter().filter(|b| &b.kind == b"mdat").count() != 1 {
        return Err(bad("expected exactly one mdat box"));
    }
    let moov_body = &file[moov.body..moov.end];
    // First pass with no shift to learn the new moov size (offsets do not change it).
    let probe = rewrite_moov(
        moov_body,
        &Ctx {
            shift: 0,
            edit: edit.as_ref(),
        },
    )?;
    let mut head_len = 0usize;
    for b in &top {
        if &b.kind == b"ftyp" {
            head_len += b.end - b.start;
        }
    }
    // New layout: ftyp, moov, then every other box in its original order.
    let mut before_mdat = head_len + probe.len();
    for b in &top {
        if b.start >= mdat.start {
            break;
        }
        if &b.kind != b"ftyp" && &b.kind != b"moov" {
            before_mdat += b.end - b.start;
        }
    }
    let shift = before_mdat as i64 - mdat.start as i64;
    let new_moov = rewrite_moov(
        moov_body,
        &Ctx {
            shift,
            edit: edit.as_ref(),
        },
    )?;
    if new_moov.len() != probe.len() {
        return Err(bad("moov size changed while rewriting"));
    }
    let mut out = Vec::with_capacity(file.len() + 64);
    for b in top.iter().filter(|b| &b.kind == b"ftyp") {
        out.extend_from_slice(&file[b.start..b.end]);
    }
    out.extend_from_slice(&new_moov);
    for b in top
        .iter()
        .filter(|b| &b.kind != b"ftyp" && &b.kind != b"moov")
    {
        out.extend_from_slice(&file[b.start..b.end]);
    }
    Ok(out)
}
