//! The uploaded file record (`ORG#<org>` / `FILE#<file id>`, docs/table-design.md): written
//! once when the bytes are stored, read by the file routes and by the jobs and requests that
//! refer to the file.

use crate::ports::store::{item, Attr, Item, ItemExt, Key, EXPIRES_AT};

/// The item's `kind`.
pub const KIND: &str = "file";

#[derive(Clone, Debug, PartialEq)]
pub struct FileRecord {
    pub org: String,
    pub id: String,
    pub bytes: u64,
    pub created_at: i64,
    /// When the file and its bytes are deleted.
    pub expires_at: i64,
    pub filename: String,
    /// One of `files::PURPOSES`, checked at upload.
    pub purpose: String,
    /// Detected MIME type of the content.
    pub mime_type: String,
}

impl FileRecord {
    pub fn key(&self) -> Key {
        crate::domain::table_keys::file(&self.org, &self.id)
    }

    pub fn to_item(&self) -> Item {
        let mut it = item(&self.key());
        let mut put = |name: &str, value: Attr| {
            it.insert(name.to_owned(), value);
        };
        put("kind", KIND.into());
        put("id", self.id.clone().into());
        put(
            "bytes",
            i64::try_from(self.bytes).unwrap_or(i64::MAX).into(),
        );
        put("created_at", self.created_at.into());
        put(EXPIRES_AT, self.expires_at.into());
        put("filename", self.filename.clone().into());
        put("purpose", self.purpose.clone().into());
        put("mime_type", self.mime_type.clone().into());
        it
    }

    /// The record of a stored file item of `org`; None without an id.
    pub fn from_item(org: &str, it: &Item) -> Option<FileRecord> {
        Some(FileRecord {
            org: org.to_owned(),
            id: it.str_attr("id")?.to_owned(),
            bytes: it.i64_attr("bytes").unwrap_or_default().max(0) as u64,
            created_at: it.i64_attr("created_at").unwrap_or_default(),
            expires_at: it.i64_attr(EXPIRES_AT).unwrap_or_default(),
            filename: it.str_attr("filename").unwrap_or_default().to_owned(),
            purpose: it.str_attr("purpose").unwrap_or_default().to_owned(),
            mime_type: it
                .str_attr("mime_type")
                .unwrap_or("application/octet-stream")
                .to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_stored_as_it_always_was_and_reads_back() {
        let f = FileRecord {
            org: "org_1".into(),
            id: "file_1".into(),
            bytes: 68,
            created_at: 1_700_000_000,
            expires_at: 1_702_592_000,
            filename: "frame.png".into(),
            purpose: "vision".into(),
            mime_type: "image/png".into(),
        };
        let it = f.to_item();
        let mut names: Vec<&str> = it.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "bytes",
                "created_at",
                "expires_at",
                "filename",
                "id",
                "kind",
                "mime_type",
                "pk",
                "purpose",
                "sk"
            ]
        );
        assert_eq!(it.str_attr("sk"), Some("FILE#file_1"));
        assert_eq!(it.str_attr("kind"), Some("file"));
        assert_eq!(FileRecord::from_item("org_1", &it), Some(f));
    }
}
