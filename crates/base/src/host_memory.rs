//! The one host-memory check: before a command allocates what scales with its input (a
//! machine's frames, TLBs, walk and data caches × cores, a DRAM profile's banks, a GPU
//! MMU, a native benchmark's buffer, an MRC's curve, a sweep's rows), it adds up what it
//! will need ([`Need`]) and asks [`Need::check`], which refuses with the figure, the
//! parts that scale and what to change, instead of letting the allocation abort the
//! process or the kernel's OOM killer end it.
//!
//! What the host has ([`available`]): `MMULAB_HOST_MEMORY` ([`ENV`], a size such as
//! `64GiB`) if set, else `MemAvailable` of /proc/meminfo, lowered to the process's
//! address-space limit (`ulimit -v`, read from /proc/self/limits so that this crate needs
//! no libc) when that is smaller.

use crate::units::parse_size;

/// The environment variable that states the host memory mmulab may use (a size such as
/// `64GiB`), replacing `MemAvailable` of /proc/meminfo.
pub const ENV: &str = "MMULAB_HOST_MEMORY";

/// What the host has for mmulab: bytes, and where the figure comes from (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Available {
    /// Bytes mmulab may use.
    pub bytes: u64,
    /// Where the figure comes from (`MemAvailable in /proc/meminfo`, the variable, the limit).
    pub source: String,
}

/// The host memory mmulab may use ([`ENV`] if set, else `MemAvailable`, lowered to the
/// address-space limit); `None` when neither is known (no /proc: nothing is refused).
/// An unparsable [`ENV`] is an error naming it.
pub fn available() -> Result<Option<Available>, String> {
    if let Ok(v) = std::env::var(ENV) {
        let bytes = parse_size(&v).map_err(|e| format!("{ENV} = '{v}': {e} (give a size such as 64GiB)"))?;
        return Ok(Some(Available {
            bytes,
            source: format!("{ENV}={v}"),
        }));
    }
    let avail = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| Available {
                bytes: kib.saturating_mul(1024),
                source: "MemAvailable in /proc/meminfo".into(),
            })
    });
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| address_space_limit(&t))
        .map(|bytes| Available {
            bytes,
            source: "the process's address-space limit (ulimit -v)".into(),
        });
    // A process limited in address space (ulimit -v, a test harness) has less than the
    // host's free memory: the smaller figure holds.
    Ok(match (avail, limit) {
        (Some(a), Some(l)) => Some(if l.bytes < a.bytes { l } else { a }),
        (a, l) => a.or(l),
    })
}

/// The soft "Max address space" of a /proc/self/limits text, if finite.
fn address_space_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find_map(|l| l.strip_prefix("Max address space"))?;
    line.split_whitespace().next()?.parse().ok()
}

/// What a command will allocate, by part: `(what, bytes)`, in the order added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Need {
    /// The parts, each described for the message (`memory.size = 16GiB: 4194304 frames × 16 bytes`).
    pub parts: Vec<(String, u64)>,
}

impl Need {
    /// No part yet.
    pub fn new() -> Need {
        Need::default()
    }

    /// Adds a part.
    pub fn add(&mut self, what: impl Into<String>, bytes: u64) -> &mut Need {
        self.parts.push((what.into(), bytes));
        self
    }

    /// Adds every part of `other`.
    pub fn extend(&mut self, other: Need) -> &mut Need {
        self.parts.extend(other.parts);
        self
    }

    /// Total bytes (saturating: a geometry of 2^70 bytes is refused, not wrapped).
    pub fn total(&self) -> u64 {
        self.parts.iter().fold(0u64, |a, p| a.saturating_add(p.1))
    }

    /// Refuses when [`Need::total`] exceeds [`available`]: the message names `subject`
    /// (`this machine`, `DRAM profile x.toml`), the total, the parts of at least 1 MiB
    /// largest first, what the host has and where that figure comes from, `advice` (what
    /// to lower, by its key or option) and [`ENV`].
    pub fn check(&self, subject: &str, advice: &str) -> Result<(), String> {
        match available()? {
            Some(have) => self.check_against(&have, subject, advice),
            None => Ok(()),
        }
    }

    /// [`Need::check`] against a stated figure (tests; callers that read it once).
    pub fn check_against(&self, have: &Available, subject: &str, advice: &str) -> Result<(), String> {
        let total = self.total();
        if total <= have.bytes {
            return Ok(());
        }
        let mut parts: Vec<&(String, u64)> = self.parts.iter().filter(|p| p.1 >= 1 << 20).collect();
        parts.sort_by_key(|p| std::cmp::Reverse(p.1));
        let parts: Vec<String> = parts
            .iter()
            .map(|(what, b)| format!("{} for {what}", bytes(*b)))
            .collect();
        Err(format!(
            "{subject} needs about {} of host memory ({}), but the host has {} available ({}); {advice}, or set \
             {ENV}=SIZE to state the memory mmulab may use (docs/config.md, \"Host memory\")",
            bytes(total),
            parts.join(", "),
            bytes(have.bytes),
            have.source
        ))
    }
}

/// Bytes for a message: GiB with one decimal, MiB below 1 GiB, "more than 16 EiB" when
/// the sum saturated.
pub fn bytes(b: u64) -> String {
    if b == u64::MAX {
        "more than 16 EiB".into()
    } else if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have(gib: u64) -> Available {
        Available {
            bytes: gib << 30,
            source: "test".into(),
        }
    }

    #[test]
    fn a_need_within_the_host_passes_and_one_beyond_names_its_parts_largest_first() {
        let mut n = Need::new();
        n.add("small", 512 << 10).add("caches", 3 << 30).add("frames", 1 << 30);
        assert_eq!(n.total(), (4 << 30) + (512 << 10));
        assert!(n.check_against(&have(5), "this machine", "lower it").is_ok());
        let e = n
            .check_against(&have(2), "this machine", "lower caches.l2.size")
            .unwrap_err();
        assert!(
            e.starts_with("this machine needs about 4.0 GiB of host memory (3.0 GiB for caches, 1.0 GiB for frames)"),
            "{e}"
        );
        assert!(
            e.contains("2.0 GiB available (test); lower caches.l2.size, or set MMULAB_HOST_MEMORY"),
            "{e}"
        );
        assert!(!e.contains("small"), "parts under 1 MiB are left out: {e}");
    }

    #[test]
    fn a_sum_past_sixteen_exabytes_saturates_and_is_refused() {
        let mut n = Need::new();
        n.add("ranks", u64::MAX / 2 + 1).add("banks", u64::MAX / 2 + 1);
        assert_eq!(n.total(), u64::MAX);
        let e = n
            .check_against(&have(1 << 20), "DRAM profile", "lower ranks")
            .unwrap_err();
        assert!(e.contains("more than 16 EiB"), "{e}");
    }

    #[test]
    fn the_address_space_limit_is_read_from_proc_self_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max stack size            8388608              unlimited            bytes     \n\
                    Max address space         4096000000           unlimited            bytes     \n";
        assert_eq!(address_space_limit(text), Some(4_096_000_000));
        let unlimited = text.replace("4096000000  ", "unlimited   ");
        assert_eq!(address_space_limit(&unlimited), None);
    }
}
