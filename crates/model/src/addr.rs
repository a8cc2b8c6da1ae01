//! Virtual and physical addresses, page sizes and address-space ids.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// An address-space id: which process's page table a reference uses.
pub type Asid = u16;

/// Size of the base frame in which physical memory is managed.
pub const FRAME_SHIFT: u32 = 12;
/// 4 KiB.
pub const FRAME_SIZE: u64 = 1 << FRAME_SHIFT;

/// A page (or block, or contiguous-group) size the models know.
///
/// 4K/2M/1G are x86-64 and ARMv8 4K-granule sizes; 16K, 64K, 32M and 512M come with the
/// ARMv8 16K/64K granules and the contiguous bit; 1M and 16M are ARMv7 sections and
/// supersections (and V3D super pages).
///
/// Serialized as its name (`"2M"`); deserialized by [`PageSize::parse`], so a config
/// may also write `"2MiB"` or a byte count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[repr(u8)]
pub enum PageSize {
    /// 4 KiB.
    #[serde(rename = "4K")]
    K4 = 0,
    /// 16 KiB.
    #[serde(rename = "16K")]
    K16 = 1,
    /// 64 KiB.
    #[serde(rename = "64K")]
    K64 = 2,
    /// 1 MiB.
    #[serde(rename = "1M")]
    M1 = 3,
    /// 2 MiB.
    #[serde(rename = "2M")]
    M2 = 4,
    /// 16 MiB.
    #[serde(rename = "16M")]
    M16 = 5,
    /// 32 MiB.
    #[serde(rename = "32M")]
    M32 = 6,
    /// 512 MiB.
    #[serde(rename = "512M")]
    M512 = 7,
    /// 1 GiB.
    #[serde(rename = "1G")]
    G1 = 8,
}

/// Shift of each page size, indexed by `PageSize as usize`.
pub const SHIFTS: [u32; 9] = [12, 14, 16, 20, 21, 24, 25, 29, 30];

impl PageSize {
    /// Every size, smallest first.
    pub const ALL: [PageSize; 9] = [
        PageSize::K4,
        PageSize::K16,
        PageSize::K64,
        PageSize::M1,
        PageSize::M2,
        PageSize::M16,
        PageSize::M32,
        PageSize::M512,
        PageSize::G1,
    ];

    /// log2 of the size in bytes.
    #[inline]
    pub const fn shift(self) -> u32 {
        SHIFTS[self as usize]
    }

    /// Size in bytes.
    #[inline]
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }

    /// Mask of the offset bits inside a page of this size.
    #[inline]
    pub const fn offset_mask(self) -> u64 {
        self.bytes() - 1
    }

    /// The page size whose shift is `shift`, if any.
    pub fn from_shift(shift: u32) -> Option<PageSize> {
        PageSize::ALL.into_iter().find(|p| p.shift() == shift)
    }

    /// The size with this many bytes, if any.
    pub fn from_bytes(bytes: u64) -> Option<PageSize> {
        if !bytes.is_power_of_two() {
            return None;
        }
        Self::from_shift(bytes.trailing_zeros())
    }

    /// Index for per-size arrays.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Parses `4K`, `2M`, `1G`, `64KiB`, `2MB`, or a byte count.
    pub fn parse(s: &str) -> Result<PageSize, String> {
        let t = s.trim().to_ascii_uppercase();
        let t = t.strip_suffix("IB").or_else(|| t.strip_suffix('B')).unwrap_or(&t);
        let bytes = if let Some(n) = t.strip_suffix('K') {
            n.parse::<u64>().ok().map(|n| n << 10)
        } else if let Some(n) = t.strip_suffix('M') {
            n.parse::<u64>().ok().map(|n| n << 20)
        } else if let Some(n) = t.strip_suffix('G') {
            n.parse::<u64>().ok().map(|n| n << 30)
        } else {
            t.parse::<u64>().ok()
        };
        bytes.and_then(PageSize::from_bytes).ok_or_else(|| {
            format!(
                "'{s}' is not a supported page size; use one of {}",
                PageSize::ALL.map(|p| p.to_string()).join(", ")
            )
        })
    }
}

impl<'de> Deserialize<'de> for PageSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        PageSize::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.bytes();
        if b >= 1 << 30 {
            write!(f, "{}G", b >> 30)
        } else if b >= 1 << 20 {
            write!(f, "{}M", b >> 20)
        } else {
            write!(f, "{}K", b >> 10)
        }
    }
}

/// Rounds `a` down to a multiple of `align` (a power of two).
#[inline]
pub const fn align_down(a: u64, align: u64) -> u64 {
    a & !(align - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifts_match_bytes_and_parse_round_trips() {
        for p in PageSize::ALL {
            assert_eq!(PageSize::from_bytes(p.bytes()), Some(p));
            assert_eq!(PageSize::parse(&p.to_string()), Ok(p));
        }
        assert_eq!(PageSize::parse("2MiB"), Ok(PageSize::M2));
        assert_eq!(PageSize::parse("4096"), Ok(PageSize::K4));
        assert!(PageSize::parse("8K").is_err());
        assert!(PageSize::ALL.windows(2).all(|w| w[0].bytes() < w[1].bytes()));
    }
}
