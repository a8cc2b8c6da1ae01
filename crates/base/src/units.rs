//! Parsing of sizes (`4K`, `2MiB`, `1G`, binary multiples) and counts (`100M`, decimal
//! multiples), shared by workload specs and configs.

/// Parses a byte size. Suffixes K, M, G, T (optionally followed by `iB` or `B`) are binary
/// multiples: `4K` = `4KiB` = 4096. A bare number is bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let stripped = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (num, mult) = match stripped.chars().last() {
        Some('k') => (&stripped[..stripped.len() - 1], 1u64 << 10),
        Some('m') => (&stripped[..stripped.len() - 1], 1u64 << 20),
        Some('g') => (&stripped[..stripped.len() - 1], 1u64 << 30),
        Some('t') => (&stripped[..stripped.len() - 1], 1u64 << 40),
        _ => (stripped, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a size (expected e.g. 4096, 4K, 2MiB, 1G)"))?;
    n.checked_mul(mult).ok_or_else(|| format!("size '{s}' is too large"))
}

/// Parses a count. Suffixes K, M, G are decimal (`100M` = 100,000,000); `_` separators
/// are allowed.
pub fn parse_count(s: &str) -> Result<u64, String> {
    let t: String = s.trim().chars().filter(|&c| c != '_').collect();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000u64),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('g' | 'G' | 'b' | 'B') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (&t[..], 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a count (expected e.g. 1000, 10K, 100M)"))?;
    n.checked_mul(mult).ok_or_else(|| format!("count '{s}' is too large"))
}

/// Formats a byte size with the largest exact binary unit (`2MiB`, `4KiB`, `1536B`).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (m, u) in UNITS {
        if bytes >= m && bytes % m == 0 {
            return format!("{}{u}", bytes / m);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("2m").unwrap(), 2 << 20);
        assert_eq!(parse_size("1GiB").unwrap(), 1 << 30);
        assert_eq!(parse_size("123").unwrap(), 123);
        assert!(parse_size("x").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert_eq!(format_size(2 << 20), "2MiB");
        assert_eq!(format_size(1536), "1536B");
    }

    #[test]
    fn counts() {
        assert_eq!(parse_count("100M").unwrap(), 100_000_000);
        assert_eq!(parse_count("1_000").unwrap(), 1000);
        assert_eq!(parse_count("10k").unwrap(), 10_000);
        assert!(parse_count("ten").is_err());
    }
}
