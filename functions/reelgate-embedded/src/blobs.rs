//! The embedded blob store: files under a directory, and presigned URLs that the local server
//! signs and serves itself (`/blobs/{key}?expires=…&signature=…`), so that an engine or an upstream
//! model fetches a blob exactly as it would fetch an S3 presigned URL.

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use hmac::{Hmac, Mac};
use reelgate::ports::blobs::*;
use sha2::Sha256;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// Route prefix under which the local server serves presigned blob URLs.
pub const PRESIGNED_ROUTE: &str = "/blobs";

pub struct LocalBlobStore {
    root: PathBuf,
    signer: UrlSigner,
}

/// Signs and verifies local presigned URLs with a secret kept in the data directory.
#[derive(Clone)]
pub struct UrlSigner {
    secret: Vec<u8>,
    public_base_url: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum SignatureCheck {
    Valid,
    Expired,
    Invalid,
}

impl UrlSigner {
    pub fn new(secret: Vec<u8>, public_base_url: &str) -> Self {
        UrlSigner {
            secret,
            public_base_url: public_base_url.trim_end_matches('/').to_owned(),
        }
    }

    /// Loads the signing secret from `path`, creating it on first use.
    /// Reads the URL-signing key, creating it (owner read/write only, mode 0600) on first use.
    /// An existing key readable by anyone but its owner is tightened to 0600 before it is used;
    /// if that fails, start-up stops rather than sign URLs with a key others may have read.
    pub fn load_or_create_secret(path: &Path) -> std::io::Result<Vec<u8>> {
        match std::fs::read(path) {
            Ok(secret) if secret.len() >= 32 => {
                owner_only(path)?;
                Ok(secret)
            }
            _ => {
                let secret = reelgate::domain::ids::new_secret(48).into_bytes();
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                write_owner_only(path, &secret)?;
                Ok(secret)
            }
        }
    }

    fn signature(&self, method: &str, key: &str, expires: i64, content_type: &str) -> String {
        let mut mac = match Hmac::<Sha256>::new_from_slice(&self.secret) {
            Ok(mac) => mac,
            Err(_) => return String::new(),
        };
        mac.update(format!("{method}\n{key}\n{expires}\n{content_type}").as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    pub fn sign(&self, method: &str, key: &str, ttl: Duration, content_type: &str) -> String {
        let expires = reelgate::ports::store::now_secs() + ttl.as_secs().max(1) as i64;
        let signature = self.signature(method, key, expires, content_type);
        let path: String = key
            .split('/')
            .map(|seg| url::form_urlencoded::byte_serialize(seg.as_bytes()).collect::<String>())
            .collect::<Vec<_>>()
            .join("/");
        format!(
            "{}{PRESIGNED_ROUTE}/{path}?expires={expires}&signature={signature}",
            self.public_base_url
        )
    }

    pub fn verify(
        &self,
        method: &str,
        key: &str,
        expires: i64,
        content_type: &str,
        signature: &str,
    ) -> SignatureCheck {
        let expected = self.signature(method, key, expires, content_type);
        use subtle::ConstantTimeEq;
        if expected.is_empty() || expected.as_bytes().ct_eq(signature.as_bytes()).unwrap_u8() != 1 {
            return SignatureCheck::Invalid;
        }
        if expires <= reelgate::ports::store::now_secs() {
            return SignatureCheck::Expired;
        }
        SignatureCheck::Valid
    }
}

impl LocalBlobStore {
    pub fn new(root: PathBuf, signer: UrlSigner) -> Self {
        LocalBlobStore { root, signer }
    }

    pub fn signer(&self) -> &UrlSigner {
        &self.signer
    }

    fn path_of(&self, key: &str) -> Result<PathBuf, BlobError> {
        // Keys are built by the service, but refuse anything that could leave the root.
        let safe = !key.is_empty()
            && key.split('/').all(|seg| {
                !seg.is_empty()
                    && seg != "."
                    && seg != ".."
                    && seg
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            });
        if !safe {
            return Err(BlobError::NotFound);
        }
        Ok(self.root.join("data").join(key))
    }

    fn meta_path(&self, key: &str) -> Result<PathBuf, BlobError> {
        Ok(self.root.join("meta").join(format!("{key}.json")))
            .and_then(|p| self.path_of(key).map(|_| p))
    }

    async fn write_meta(&self, key: &str, meta: &BlobMeta) -> Result<(), BlobError> {
        let path = self.meta_path(key)?;
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await.map_err(io_err)?;
        }
        let body = serde_json::json!({"size": meta.size, "content_type": meta.content_type});
        tokio::fs::write(&path, body.to_string())
            .await
            .map_err(io_err)
    }
}

/// One blob file as the directory holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBlob {
    pub key: String,
    pub size: u64,
    /// Unix seconds of its last write.
    pub written_at: i64,
}

impl LocalBlobStore {
    /// Every blob whose key starts with `prefix` (`""` for all), with its size and write time.
    /// Partial uploads (temporary files) are not blobs and are not listed.
    pub async fn list_written(&self, prefix: &str) -> Result<Vec<StoredBlob>, BlobError> {
        let (data, prefix) = (self.root.join("data"), prefix.to_owned());
        tokio::task::spawn_blocking(move || {
            let mut found = Vec::new();
            walk(&data, &data, &mut |key, meta| {
                if !is_partial(key) && key.starts_with(&prefix) {
                    found.push(StoredBlob {
                        key: key.to_owned(),
                        size: meta.len(),
                        written_at: written_at(meta),
                    });
                }
            })?;
            found.sort_by(|a, b| a.key.cmp(&b.key));
            Ok(found)
        })
        .await
        .map_err(|e| BlobError::Unavailable(e.to_string()))?
        .map_err(io_err)
    }

    /// The local stand-in for the bucket's lifecycle rules: deletes every blob written more
    /// than `max_age` seconds before `now`, and every partial upload older than `staging_max_age`.
    /// Returns how many blobs and partial uploads it removed.
    pub async fn expire_aged(
        &self,
        now: i64,
        max_age: i64,
        staging_max_age: i64,
    ) -> Result<(usize, usize), BlobError> {
        let data = self.root.join("data");
        let listed = tokio::task::spawn_blocking(move || {
            let mut found = Vec::new();
            walk(&data, &data, &mut |key, meta| {
                found.push((key.to_owned(), written_at(meta)));
            })
            .map(|()| found)
        })
        .await
        .map_err(|e| BlobError::Unavailable(e.to_string()))?
        .map_err(io_err)?;
        let (mut blobs, mut partial) = (0, 0);
        for (key, written) in listed {
            if is_partial(&key) {
                if now - written > staging_max_age {
                    remove_if_present(&self.root.join("data").join(&key)).await?;
                    partial += 1;
                }
            } else if now - written > max_age {
                self.delete(&key).await?;
                blobs += 1;
            }
        }
        Ok((blobs, partial))
    }
}

/// A partial upload: `put_stream` writes into `.upload-…` beside the blob and renames it.
fn is_partial(key: &str) -> bool {
    key.rsplit('/')
        .next()
        .is_some_and(|name| name.starts_with(".upload-"))
}

fn written_at(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs() as i64)
}

/// Calls `visit(key, metadata)` for every file under `dir`, keys relative to `root` with `/`.
fn walk(
    root: &Path,
    dir: &Path,
    visit: &mut dyn FnMut(&str, &std::fs::Metadata),
) -> std::io::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let meta = entry.metadata()?;
        let path = entry.path();
        if meta.is_dir() {
            walk(root, &path, visit)?;
        } else if let Ok(relative) = path.strip_prefix(root) {
            let key: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            visit(&key.join("/"), &meta);
        }
    }
    Ok(())
}

async fn remove_if_present(path: &Path) -> Result<(), BlobError> {
    match tokio::fs::remove_file(path).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(e)),
    }
}

fn io_err(e: std::io::Error) -> BlobError {
    BlobError::Unavailable(e.to_string())
}

#[async_trait]
impl BlobStore for LocalBlobStore {
    async fn put_stream(
        &self,
        key: &str,
        content_type: &str,
        mut body: ByteStream,
        max_bytes: u64,
    ) -> Result<u64, BlobError> {
        let path = self.path_of(key)?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        tokio::fs::create_dir_all(&dir).await.map_err(io_err)?;
        let tmp = dir.join(format!(".upload-{}", reelgate::domain::ids::new_secret(9)));
        let mut file = tokio::fs::File::create(&tmp).await.map_err(io_err)?;
        let mut size = 0u64;
        let outcome: Result<(), BlobError> = async {
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| BlobError::Source(e.to_string()))?;
                size += chunk.len() as u64;
                if size > max_bytes {
                    return Err(BlobError::TooLarge { limit: max_bytes });
                }
                file.write_all(&chunk).await.map_err(io_err)?;
            }
            file.flush().await.map_err(io_err)?;
            file.sync_data().await.map_err(io_err)
        }
        .await;
        drop(file);
        if let Err(e) = outcome {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(e);
        }
        tokio::fs::rename(&tmp, &path).await.map_err(io_err)?;
        self.write_meta(
            key,
            &BlobMeta {
                size,
                content_type: content_type.to_owned(),
            },
        )
        .await?;
        Ok(size)
    }

    async fn put_bytes(
        &self,
        key: &str,
        content_type: &str,
        bytes: Bytes,
    ) -> Result<(), BlobError> {
        let len = bytes.len() as u64;
        self.put_stream(key, content_type, stream_of(bytes), len)
            .await
            .map(|_| ())
    }

    async fn head(&self, key: &str) -> Result<Option<BlobMeta>, BlobError> {
        let path = self.path_of(key)?;
        let file_meta = match tokio::fs::metadata(&path).await {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(e)),
        };
        let content_type = match tokio::fs::read(self.meta_path(key)?).await {
            Ok(raw) => serde_json::from_slice::<serde_json::Value>(&raw)
                .ok()
                .and_then(|v| v["content_type"].as_str().map(str::to_owned)),
            Err(_) => None,
        }
        .unwrap_or_else(|| "application/octet-stream".to_owned());
        Ok(Some(BlobMeta {
            size: file_meta.len(),
            content_type,
        }))
    }

    async fn get(&self, key: &str, range: Option<ByteRange>) -> Result<BlobRead, BlobError> {
        let meta = self.head(key).await?.ok_or(BlobError::NotFound)?;
        // A delete between the two reads leaves the metadata without its bytes for a moment:
        // that is a missing blob (404), not a failing store (found by Schemathesis deleting a
        // file while reading it).
        let mut file = match tokio::fs::File::open(self.path_of(key)?).await {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(BlobError::NotFound),
            Err(e) => return Err(io_err(e)),
        };
        let range = match range {
            Some(r) => Some(clamp_range(r, meta.size)?),
            None => None,
        };
        let body: ByteStream = match range {
            Some(r) => {
                file.seek(std::io::SeekFrom::Start(r.start))
                    .await
                    .map_err(io_err)?;
                let limited = file.take(r.end_inclusive - r.start + 1);
                Box::pin(tokio_util::io::ReaderStream::new(limited))
            }
            None => Box::pin(tokio_util::io::ReaderStream::new(file)),
        };
        Ok(BlobRead { meta, range, body })
    }

    async fn delete(&self, key: &str) -> Result<(), BlobError> {
        for path in [self.path_of(key)?, self.meta_path(key)?] {
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(e)),
            }
        }
        Ok(())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<BlobListing>, BlobError> {
        Ok(self
            .list_written(prefix)
            .await?
            .into_iter()
            .map(|b| BlobListing {
                key: b.key,
                size: b.size,
            })
            .collect())
    }

    async fn presign_get(&self, key: &str, ttl: Duration) -> Result<String, BlobError> {
        self.path_of(key)?;
        Ok(self.signer.sign("GET", key, ttl, ""))
    }

    async fn presign_put(
        &self,
        key: &str,
        content_type: &str,
        ttl: Duration,
    ) -> Result<String, BlobError> {
        self.path_of(key)?;
        Ok(self.signer.sign("PUT", key, ttl, content_type))
    }
}

/// Writes `bytes` to a new file that only its owner can read (0600 from the moment it exists:
/// written to a temporary name created with that mode, then renamed into place).
#[cfg(unix)]
fn write_owner_only(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    owner_only(path)
}

#[cfg(not(unix))]
fn write_owner_only(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

/// Makes `path` readable and writable by its owner only (refusing a key file others can read).
#[cfg(unix)]
fn owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        tracing::warn!(
            path = %path.display(),
            "the URL-signing key was readable by others (mode {mode:o}); it is now 0600"
        );
    }
    Ok(())
}

#[cfg(not(unix))]
fn owner_only(_path: &Path) -> std::io::Result<()> {
    Ok(())
}
