//! Characters (`/v1/videos/characters`): a named set of reference frames an organization keeps,
//! taken from a short video (frames sampled through it) or an image, and added as reference
//! images to the jobs that name them (`characters: [ids]` on create and remix). The caller's
//! video is checked with the conform stage's reading of it (codec, profile, bit depth, pixels,
//! seconds) before one frame is decoded; the frames are moderated with each job that uses them.

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ids::{is_valid, new_id};
use crate::domain::params::{ListQuery, Page, RequestBody, ShapeFault};
use crate::domain::table_keys;
use crate::domain::Context;
use crate::ports::store::{item, now_secs, Attr, Condition, Item, ItemExt, Key, Query, EXPIRES_AT};
use bytes::Bytes;
use reelgate_media::MediaKind;
use serde::{Deserialize, Serialize};

/// Frames kept per character (sampled evenly through a video; an image is one frame).
pub const MAX_FRAMES_PER_CHARACTER: u32 = 4;
/// Characters one job may name.
pub const MAX_CHARACTERS_PER_JOB: usize = 2;
/// The longest video a character is taken from.
pub const MAX_VIDEO_SECS: f64 = 20.0;
/// The largest picture a character's video or image may hold (1920x1080), checked before it
/// is decoded: with the decoder's reference pictures, a request stays within 256 MiB.
pub const MAX_PIXELS: u64 = 1920 * 1080;
/// The largest video or image a character is made from.
pub const MAX_SOURCE_BYTES: u64 = 32 * 1024 * 1024;
/// Each kept frame's width in pixels (a reference image).
pub const FRAME_WIDTH: u32 = 768;
pub const MAX_NAME_CHARS: usize = 80;

/// The item's `kind`.
const KIND: &str = "video_character";

/// A character as the API returns it (`POST`/`GET /v1/videos/characters…`); OpenAI's SDK reads
/// `id`, `name` and `created_at`.
#[derive(Clone, Debug, Serialize, PartialEq, utoipa::ToSchema)]
pub struct Character {
    pub id: String,
    #[schema(value_type = String, pattern = "^video\\.character$")]
    pub object: &'static str,
    pub name: String,
    pub created_at: i64,
    /// When the character and its frames are deleted (30 days after creation).
    pub expires_at: i64,
    /// How many reference frames it holds (1 to 4): each is a reference image of a job.
    pub frames: u32,
}

/// `POST /v1/videos/characters` as OpenAI's SDK sends it (multipart `name` and a `video` file
/// part), or as JSON naming an uploaded file.
#[derive(Debug, Clone, PartialEq, utoipa::ToSchema)]
pub struct CharacterCreateRequest {
    #[schema(min_length = 1, max_length = 80)]
    pub name: String,
    /// Multipart only: an MP4 (H.264, at most 20 s and 1920x1080) or a PNG, JPEG or WebP image,
    /// at most 32 MiB.
    #[schema(value_type = Option<String>, format = Binary)]
    pub video: Option<Bytes>,
    /// JSON: an uploaded file (purpose `video` or `vision`) to take the frames from.
    pub file_id: Option<String>,
}

/// `POST /v1/videos/characters` as JSON: a name and an uploaded file to take the frames from
/// (a form's `video` part is read by the handler). An unknown parameter is refused by name;
/// null counts as not given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CharacterJsonBody {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    file_id: Option<String>,
}

impl RequestBody for CharacterJsonBody {
    fn expected(param: &str, _path: &str) -> Option<String> {
        Some(format!("{param} must be a string."))
    }

    fn refusal(fault: &ShapeFault) -> Option<ApiError> {
        fault.refuse_unknown(|unknown| {
            format!(
                "Unknown parameter: {unknown}. A character takes name and file_id (JSON), or \
                 name and a video part (a form)."
            )
        })
    }

    fn check(self) -> ApiResult<Self> {
        for (name, value) in [("name", &self.name), ("file_id", &self.file_id)] {
            if value.is_none() {
                return Err(crate::domain::params::required(name));
            }
        }
        Ok(self)
    }
}

impl From<CharacterJsonBody> for CharacterCreateRequest {
    /// (Both are present once [`RequestBody::check`] has passed.)
    fn from(body: CharacterJsonBody) -> Self {
        CharacterCreateRequest {
            name: body.name.unwrap_or_default(),
            video: None,
            file_id: body.file_id,
        }
    }
}

fn key(org: &str, id: &str) -> Key {
    table_keys::character(org, id)
}

/// Where frame `i` of character `id` is kept.
pub fn frame_blob_key(org: &str, id: &str, i: u32) -> String {
    format!("{org}/characters/{id}/frame_{i}.jpg")
}

/// Every blob a character may own.
pub fn blob_keys(org: &str, id: &str) -> Vec<String> {
    (0..MAX_FRAMES_PER_CHARACTER)
        .map(|i| frame_blob_key(org, id, i))
        .collect()
}

fn to_item(org: &str, c: &Character) -> Item {
    let mut it = item(&key(org, &c.id));
    it.insert("kind".into(), KIND.into());
    it.insert("id".into(), c.id.clone().into());
    it.insert("name".into(), c.name.clone().into());
    it.insert("created_at".into(), c.created_at.into());
    it.insert(EXPIRES_AT.into(), c.expires_at.into());
    it.insert("frames".into(), Attr::from(i64::from(c.frames)));
    it
}

fn from_item(it: &Item) -> Option<Character> {
    Some(Character {
        id: it.str_attr("id")?.to_owned(),
        object: "video.character",
        name: it.str_attr("name").unwrap_or_default().to_owned(),
        created_at: it.i64_attr("created_at").unwrap_or_default(),
        expires_at: it.i64_attr(EXPIRES_AT).unwrap_or_default(),
        frames: it.i64_attr("frames").unwrap_or_default().clamp(0, 4) as u32,
    })
}

pub fn not_found(id: &str) -> ApiError {
    ApiError::not_found(
        "character_not_found",
        format!("No character found with id '{id}'."),
    )
    .with_param("character_id")
}

/// The name a caller gave, trimmed: 1 to [`MAX_NAME_CHARS`] characters.
pub fn check_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::invalid("name", "name must not be empty."));
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(ApiError::invalid(
            "name",
            format!("name is {chars} characters; at most {MAX_NAME_CHARS} are allowed."),
        ));
    }
    Ok(name.to_owned())
}

/// The reference frames of a caller's video or image (`param` names the field it came in):
/// sampled JPEGs of an MP4 that passes the source checks, or the image re-encoded. Anything
/// else, and a video without one decodable frame, is a 400 naming `param`.
pub async fn frames_of(bytes: Bytes, param: &str) -> ApiResult<Vec<Vec<u8>>> {
    if bytes.len() as u64 > MAX_SOURCE_BYTES {
        return Err(ApiError::invalid(
            param,
            format!(
                "{param} is {} bytes; at most {} MiB are accepted.",
                bytes.len(),
                MAX_SOURCE_BYTES / (1024 * 1024)
            ),
        ));
    }
    let sniffed = reelgate_media::sniff(&bytes[..bytes.len().min(4096)]);
    let kind = sniffed.kind;
    let mime = sniffed.mime;
    let frames = tokio::task::spawn_blocking(move || match kind {
        MediaKind::Video => reelgate_media::check_source(&bytes, MAX_VIDEO_SECS, MAX_PIXELS)
            .and_then(|_| {
                reelgate_media::sample_frames_jpeg(&bytes, FRAME_WIDTH, MAX_FRAMES_PER_CHARACTER)
            }),
        MediaKind::Image => {
            reelgate_media::bounded_image_jpeg(&bytes, FRAME_WIDTH, MAX_PIXELS).map(|f| vec![f])
        }
        _ => Err(reelgate_media::MediaError::NotMp4(format!(
            "this content looks like {mime}"
        ))),
    })
    .await
    .map_err(|e| ApiError::internal("taking a character's frames", e))?;
    frames.map_err(|e| {
        ApiError::invalid(
            param,
            format!(
                "{param} must be an H.264 MP4 of at most {MAX_VIDEO_SECS} s and 1920x1080, or a \
                 PNG, JPEG or WebP image, with a decodable picture: {e}."
            ),
        )
    })
}

/// The create use case: the frames of the request's video (a form's part) or of its uploaded
/// file, stored first, then the record, so that a crash in between leaves only frames without
/// a record (which the blobs' age rule deletes).
pub async fn create(
    cx: Context<'_>,
    org: &str,
    request: CharacterCreateRequest,
) -> ApiResult<Character> {
    let name = check_name(&request.name)?;
    let frames = match (request.video, &request.file_id) {
        (Some(bytes), _) => frames_of(bytes, "video").await?,
        (None, Some(file_id)) => frames_of(file_bytes(cx, org, file_id).await?, "file_id").await?,
        (None, None) => return Err(crate::domain::params::required("video")),
    };
    let id = new_id("char");
    for (i, frame) in frames
        .iter()
        .take(MAX_FRAMES_PER_CHARACTER as usize)
        .enumerate()
    {
        cx.blobs
            .put_bytes(
                &frame_blob_key(org, &id, i as u32),
                "image/jpeg",
                Bytes::from(frame.clone()),
            )
            .await?;
    }
    let now = now_secs();
    let character = Character {
        id,
        object: "video.character",
        name,
        created_at: now,
        expires_at: now + cx.settings.file_retention.as_secs() as i64,
        frames: frames.len().min(MAX_FRAMES_PER_CHARACTER as usize) as u32,
    };
    cx.store
        .put(to_item(org, &character), Some(Condition::NotExists))
        .await?;
    tracing::info!(character_id = %character.id, %org, frames = character.frames, "character created");
    Ok(character)
}

/// The bytes of an uploaded file of `org` a character is made from (purpose video or vision).
async fn file_bytes(cx: Context<'_>, org: &str, file_id: &str) -> ApiResult<Bytes> {
    let file = crate::domain::files::find(cx, org, file_id)
        .await
        .map_err(|e| e.with_param("file_id"))?;
    if !["video", "vision"].contains(&file.purpose.as_str()) {
        return Err(ApiError::invalid(
            "file_id",
            format!(
                "File {file_id} has purpose '{}'; a character is made from a file of purpose \
                 video or vision.",
                file.purpose
            ),
        ));
    }
    crate::ports::blobs::read_limited(
        cx.blobs,
        &crate::domain::files::blob_key(org, file_id),
        MAX_SOURCE_BYTES,
    )
    .await
    .map_err(|e| ApiError::invalid("file_id", format!("File {file_id}: {e}")))
}

/// A character of `org`; another organization's does not exist.
pub async fn find(cx: Context<'_>, org: &str, id: &str) -> ApiResult<Character> {
    if !is_valid(id, "char") {
        return Err(not_found(id));
    }
    cx.store
        .get(&key(org, id))
        .await?
        .as_ref()
        .and_then(from_item)
        .ok_or_else(|| not_found(id))
}

/// The largest page `GET /v1/videos/characters` returns.
pub const MAX_PAGE: usize = 100;

/// A page of `org`'s characters, newest first unless `order=asc`.
pub async fn list(cx: Context<'_>, org: &str, params: &ListQuery) -> ApiResult<Page<Character>> {
    let limit = params.limit(MAX_PAGE)?;
    let mut q = Query::partition(table_keys::org_pk(org))
        .prefix(table_keys::CHARACTER_PREFIX)
        .limit(limit)
        .after(params.after("char")?.map(table_keys::character_sk));
    if params.descending()? {
        q = q.descending();
    }
    let page = cx.store.query(q).await?;
    Ok(Page::new(
        page.items.iter().filter_map(from_item).collect(),
        page.last_sk.is_some(),
    ))
}

/// Deletes a character of `org` and its frames. Jobs that named it keep their own copies.
pub async fn delete(cx: Context<'_>, org: &str, id: &str) -> ApiResult<()> {
    find(cx, org, id).await?;
    cx.store.delete(&key(org, id), None).await?;
    for key in blob_keys(org, id) {
        cx.blobs.delete(&key).await?;
    }
    Ok(())
}

/// The frames of the characters a job names, checked (each exists in `org`, at most
/// [`MAX_CHARACTERS_PER_JOB`], no repeats): the blob keys of their frames, in order, at most
/// `room` in all (the model's reference images left): when their frames are more, each
/// character keeps an even share, spread over its frames.
pub async fn frames_for_job(
    cx: Context<'_>,
    org: &str,
    ids: &[String],
    room: usize,
) -> ApiResult<Vec<String>> {
    if ids.len() > MAX_CHARACTERS_PER_JOB {
        return Err(ApiError::invalid(
            "characters",
            format!("characters holds at most {MAX_CHARACTERS_PER_JOB} ids."),
        ));
    }
    let mut frames = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(ApiError::invalid(
                &format!("characters[{i}]"),
                format!("Character {id} is named twice."),
            ));
        }
        let character = find(cx, org, id).await.map_err(|e| {
            if e.kind == crate::domain::error::ErrorKind::NotFound {
                ApiError::invalid(
                    &format!("characters[{i}]"),
                    format!("No character {id} exists in your organization."),
                )
            } else {
                e
            }
        })?;
        frames.push((id, character.frames));
    }
    let total: u32 = frames.iter().map(|(_, n)| n).sum();
    let mut keys = Vec::new();
    for (i, (id, count)) in frames.iter().enumerate() {
        let keep = if total as usize <= room {
            *count
        } else {
            // An even share of the room, the first characters taking what does not divide.
            let share = room / frames.len() + usize::from(i < room % frames.len());
            (share as u32).min(*count)
        };
        keys.extend(spread(*count, keep).map(|f| frame_blob_key(org, id, f)));
    }
    Ok(keys)
}

/// `keep` of the frame indexes `0..count`, spread evenly from the first.
fn spread(count: u32, keep: u32) -> impl Iterator<Item = u32> {
    (0..keep).map(move |k| k * count / keep.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_spread_when_the_model_takes_fewer() {
        assert_eq!(spread(4, 4).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(spread(4, 3).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(spread(4, 2).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(spread(4, 1).collect::<Vec<_>>(), vec![0]);
        assert_eq!(spread(4, 0).count(), 0);
    }

    #[test]
    fn a_character_reads_back_what_it_wrote() {
        let c = Character {
            id: "char_1".into(),
            object: "video.character",
            name: "Mika".into(),
            created_at: 1_700_000_000,
            expires_at: 1_702_592_000,
            frames: 4,
        };
        let it = to_item("org_1", &c);
        assert_eq!(it.str_attr("sk"), Some("CHARACTER#char_1"));
        assert_eq!(from_item(&it), Some(c));
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(check_name("  Mika ").ok().as_deref(), Some("Mika"));
        assert_eq!(
            check_name(" ").err().and_then(|e| e.param).as_deref(),
            Some("name")
        );
        let long = "あ".repeat(MAX_NAME_CHARS + 1);
        assert_eq!(
            check_name(&long).err().and_then(|e| e.param).as_deref(),
            Some("name")
        );
    }
}
