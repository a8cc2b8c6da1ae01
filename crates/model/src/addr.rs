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
        size_name(self.bytes(), f)
    }
}

/// The size of an anonymous folio (Linux's mTHP sizes, `hugepages-<size>kB`): any power
/// of two from 4 KiB to 1 GiB, so also the orders that no page table maps as one unit
/// (32K, 128K, 256K, 512K on a 4 KiB granule), which [`PageSize`] does not hold. A folio
/// of such a size is mapped with the units its format has (os/mthp.rs).
///
/// Serialized as its name (`"32K"`), as [`PageSize`]; parsed by [`FolioSize::parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FolioSize(u8);

impl FolioSize {
    /// The smallest shift a folio size may have (4 KiB).
    pub const MIN_SHIFT: u32 = FRAME_SHIFT;
    /// The largest (1 GiB).
    pub const MAX_SHIFT: u32 = 30;

    /// The folio size whose shift is `shift`, if it lies in 4 KiB ..= 1 GiB.
    pub const fn from_shift(shift: u32) -> Option<FolioSize> {
        if shift >= Self::MIN_SHIFT && shift <= Self::MAX_SHIFT {
            Some(FolioSize(shift as u8))
        } else {
            None
        }
    }

    /// log2 of the size in bytes.
    #[inline]
    pub const fn shift(self) -> u32 {
        self.0 as u32
    }

    /// Size in bytes.
    #[inline]
    pub const fn bytes(self) -> u64 {
        1 << self.0
    }

    /// Mask of the offset bits inside a folio of this size.
    #[inline]
    pub const fn offset_mask(self) -> u64 {
        self.bytes() - 1
    }

    /// Buddy order (of 4 KiB frames) of a folio of this size.
    #[inline]
    pub const fn order(self) -> u32 {
        self.shift() - FRAME_SHIFT
    }

    /// The page size of the same bytes, if [`PageSize`] has one.
    pub fn page(self) -> Option<PageSize> {
        PageSize::from_shift(self.shift())
    }

    /// Parses `32K`, `2M`, `128KiB`, `64KB`, or a byte count: a power of two from 4 KiB
    /// to 1 GiB.
    pub fn parse(s: &str) -> Result<FolioSize, String> {
        let t = s.trim().to_ascii_uppercase();
        let t = t.strip_suffix("IB").or_else(|| t.strip_suffix('B')).unwrap_or(&t);
        let bytes = if let Some(n) = t.strip_suffix('K') {
            n.parse::<u64>().ok().and_then(|n| n.checked_mul(1 << 10))
        } else if let Some(n) = t.strip_suffix('M') {
            n.parse::<u64>().ok().and_then(|n| n.checked_mul(1 << 20))
        } else if let Some(n) = t.strip_suffix('G') {
            n.parse::<u64>().ok().and_then(|n| n.checked_mul(1 << 30))
        } else {
            t.parse::<u64>().ok()
        };
        bytes
            .filter(|b| b.is_power_of_two())
            .and_then(|b| FolioSize::from_shift(b.trailing_zeros()))
            .ok_or_else(|| {
                format!("'{s}' is not a folio size; use a power of two from 4K to 1G (e.g. 16K, 32K, 64K, 2M)")
            })
    }
}

impl From<PageSize> for FolioSize {
    fn from(p: PageSize) -> FolioSize {
        FolioSize(p.shift() as u8)
    }
}

impl Serialize for FolioSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FolioSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        FolioSize::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for FolioSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        size_name(self.bytes(), f)
    }
}

/// A power-of-two size as a page or folio size is named: `4K`, `2M`, `1G`.
fn size_name(b: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    if b >= 1 << 30 {
        write!(f, "{}G", b >> 30)
    } else if b >= 1 << 20 {
        write!(f, "{}M", b >> 20)
    } else {
        write!(f, "{}K", b >> 10)
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

    #[test]
    fn folio_sizes_are_every_power_of_two_from_4k_to_1g() {
        for shift in 12..=30 {
            let f = FolioSize::from_shift(shift).unwrap();
            assert_eq!(FolioSize::parse(&f.to_string()), Ok(f));
            assert_eq!(f.bytes(), 1 << shift);
            assert_eq!(f.order(), shift - 12);
            assert_eq!(
                f.page().map(|p| p.shift()),
                PageSize::from_shift(shift).map(|p| p.shift())
            );
        }
        assert_eq!(FolioSize::parse("32K").unwrap().bytes(), 32 << 10);
        assert_eq!(FolioSize::parse("128KiB").unwrap().page(), None);
        assert_eq!(FolioSize::from(PageSize::M2), FolioSize::parse("2M").unwrap());
        for bad in ["2K", "3K", "48K", "2G", "0", "", "K", "99999999999999999999K"] {
            assert!(FolioSize::parse(bad).is_err(), "{bad}");
        }
        assert!(FolioSize::parse("16K").unwrap() < FolioSize::parse("32K").unwrap());
    }
}
