//! CRC-32 (ISO-HDLC), CRC-32C (iSCSI) and CRC-64/NVME behind `crc-fast`'s names, for the AWS
//! SDK's S3 checksums, which call nothing else of that crate. An algorithm the SDK does not use is
//! not a variant here, so a future SDK that asks for one fails to build instead of computing
//! something else.

/// The CRCs S3 checksums use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrcAlgorithm {
    Crc32IsoHdlc,
    Crc32Iscsi,
    Crc64Nvme,
}

/// A running CRC.
#[derive(Clone, Debug)]
pub struct Digest {
    state: State,
}

#[derive(Clone, Debug)]
enum State {
    Crc32(crc32fast::Hasher),
    /// CRC-32C's register (reflected, before the final inversion).
    Crc32c(u32),
    /// CRC-64/NVME's register (reflected, before the final inversion).
    Crc64Nvme(u64),
}

impl Digest {
    pub fn new(algorithm: CrcAlgorithm) -> Self {
        let state = match algorithm {
            CrcAlgorithm::Crc32IsoHdlc => State::Crc32(crc32fast::Hasher::new()),
            CrcAlgorithm::Crc32Iscsi => State::Crc32c(!0),
            CrcAlgorithm::Crc64Nvme => State::Crc64Nvme(!0),
        };
        Digest { state }
    }

    pub fn update(&mut self, data: &[u8]) {
        match &mut self.state {
            State::Crc32(hasher) => hasher.update(data),
            State::Crc32c(crc) => *crc = crc32c_update(*crc, data),
            State::Crc64Nvme(crc) => *crc = crc64_nvme_update(*crc, data),
        }
    }

    /// The CRC of everything given so far (the digest can go on).
    pub fn finalize(&self) -> u64 {
        match &self.state {
            State::Crc32(hasher) => u64::from(hasher.clone().finalize()),
            State::Crc32c(crc) => u64::from(!crc),
            State::Crc64Nvme(crc) => !crc,
        }
    }
}

/// The CRC of `buf`.
pub fn checksum(algorithm: CrcAlgorithm, buf: &[u8]) -> u64 {
    let mut digest = Digest::new(algorithm);
    digest.update(buf);
    digest.finalize()
}

/// CRC-32C's polynomial 0x1EDC6F41, bit-reversed.
const CRC32C_REFLECTED: u32 = 0x82F6_3B78;
/// CRC-64/NVME's polynomial 0xAD93D23594C93659, bit-reversed.
const CRC64_NVME_REFLECTED: u64 = 0x9A6C_9329_AC4B_C9B5;

/// Slice-by-8 tables of a reflected CRC of register type `$t`: table 0 is the byte-at-a-time
/// table, table k advances a byte k places further. One builder for both widths: 8 KiB for
/// CRC-32C, 16 KiB for CRC-64.
macro_rules! slice_by_8_tables {
    ($t:ty, $reflected:expr) => {{
        let mut tables = [[0 as $t; 256]; 8];
        let mut i = 0;
        while i < 256 {
            let mut crc = i as $t;
            let mut bit = 0;
            while bit < 8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ $reflected
                } else {
                    crc >> 1
                };
                bit += 1;
            }
            tables[0][i] = crc;
            i += 1;
        }
        let mut k = 1;
        while k < 8 {
            let mut i = 0;
            while i < 256 {
                let prev = tables[k - 1][i];
                tables[k][i] = (prev >> 8) ^ tables[0][(prev & 0xFF) as usize];
                i += 1;
            }
            k += 1;
        }
        tables
    }};
}

const CRC32C_TABLES: [[u32; 256]; 8] = slice_by_8_tables!(u32, CRC32C_REFLECTED);
const CRC64_NVME_TABLES: [[u64; 256]; 8] = slice_by_8_tables!(u64, CRC64_NVME_REFLECTED);

fn crc32c_update(mut crc: u32, data: &[u8]) -> u32 {
    let t = &CRC32C_TABLES;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        crc = t[7][(lo & 0xFF) as usize]
            ^ t[6][((lo >> 8) & 0xFF) as usize]
            ^ t[5][((lo >> 16) & 0xFF) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][c[4] as usize]
            ^ t[2][c[5] as usize]
            ^ t[1][c[6] as usize]
            ^ t[0][c[7] as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ t[0][((crc ^ u32::from(b)) & 0xFF) as usize];
    }
    crc
}

fn crc64_nvme_update(mut crc: u64, data: &[u8]) -> u64 {
    let t = &CRC64_NVME_TABLES;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let x = crc ^ u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        crc = t[7][(x & 0xFF) as usize]
            ^ t[6][((x >> 8) & 0xFF) as usize]
            ^ t[5][((x >> 16) & 0xFF) as usize]
            ^ t[4][((x >> 24) & 0xFF) as usize]
            ^ t[3][((x >> 32) & 0xFF) as usize]
            ^ t[2][((x >> 40) & 0xFF) as usize]
            ^ t[1][((x >> 48) & 0xFF) as usize]
            ^ t[0][(x >> 56) as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ t[0][((crc ^ u64::from(b)) & 0xFF) as usize];
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The catalogue's check values: each CRC of the nine ASCII digits "123456789".
    #[test]
    fn each_crc_gives_its_catalogued_check_value() {
        let input = b"123456789";
        assert_eq!(checksum(CrcAlgorithm::Crc32IsoHdlc, input), 0xCBF4_3926);
        assert_eq!(checksum(CrcAlgorithm::Crc32Iscsi, input), 0xE306_9283);
        assert_eq!(
            checksum(CrcAlgorithm::Crc64Nvme, input),
            0xAE8B_1486_0A79_9888
        );
    }

    /// The eight-byte path against the byte-at-a-time one, over lengths around every remainder
    /// and pieces fed in any split.
    #[test]
    fn the_eight_byte_path_agrees_with_the_byte_path_in_any_split() {
        let data: Vec<u8> = (0..1031u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1031] {
            let part = &data[..len];
            let mut crc32c = !0u32;
            let mut crc64 = !0u64;
            for &b in part {
                crc32c =
                    (crc32c >> 8) ^ CRC32C_TABLES[0][((crc32c ^ u32::from(b)) & 0xFF) as usize];
                crc64 =
                    (crc64 >> 8) ^ CRC64_NVME_TABLES[0][((crc64 ^ u64::from(b)) & 0xFF) as usize];
            }
            assert_eq!(checksum(CrcAlgorithm::Crc32Iscsi, part), u64::from(!crc32c));
            assert_eq!(checksum(CrcAlgorithm::Crc64Nvme, part), !crc64);
            for split in [0, len / 3, len / 2, len] {
                for algorithm in [
                    CrcAlgorithm::Crc32IsoHdlc,
                    CrcAlgorithm::Crc32Iscsi,
                    CrcAlgorithm::Crc64Nvme,
                ] {
                    let mut digest = Digest::new(algorithm);
                    digest.update(&part[..split]);
                    digest.update(&part[split..]);
                    assert_eq!(digest.finalize(), checksum(algorithm, part));
                }
            }
        }
    }
}
