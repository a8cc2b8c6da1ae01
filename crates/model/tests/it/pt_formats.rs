//! Every page-table format against the [`PageTableFormat`] contract, through the
//! `formats!` table: each row's variant reaches its own type, names are unique and
//! documented, the levels tile the virtual address, and descriptors round-trip.

use mmulab_model::addr::PageSize;
use mmulab_model::pt::{Format, LevelGeom, PageTableFormat, Pte, WithFormat, MAX_LEVELS};
use mmulab_model::translation::Attrs;
use std::collections::BTreeSet;

/// What the table dispatches to for one format, read from its type.
#[derive(Debug, PartialEq)]
struct Row {
    name: &'static str,
    aliases: &'static [&'static str],
    levels: &'static [LevelGeom],
    max_pa: u64,
    repeated: bool,
    contig: Vec<Option<(usize, PageSize)>>,
}

struct ReadRow;

impl WithFormat for ReadRow {
    type Output = Row;
    fn run<F: PageTableFormat>(self) -> Row {
        Row {
            name: F::ARCH_NAME,
            aliases: F::ALIASES,
            levels: F::LEVELS,
            max_pa: F::MAX_PA,
            repeated: F::REPEATED,
            contig: (0..F::LEVELS.len()).map(F::contig).collect(),
        }
    }
}

/// The contract checks of one format, run with its type.
struct Contract;

impl WithFormat for Contract {
    type Output = ();
    fn run<F: PageTableFormat>(self) {
        check_levels::<F>();
        check_round_trips::<F>();
        check_decode_by_level::<F>();
    }
}

fn check_levels<F: PageTableFormat>() {
    let name = F::ARCH_NAME;
    let l = F::LEVELS;
    assert!(!l.is_empty() && l.len() <= MAX_LEVELS, "{name}: {} levels", l.len());
    assert!(l[l.len() - 1].leaf, "{name}: the last level holds leaves");
    for w in l.windows(2) {
        assert_eq!(w[0].shift, w[1].shift + w[1].bits, "{name}: levels tile the address");
    }
    for (i, g) in l.iter().enumerate() {
        if g.leaf {
            assert_eq!(Some(F::leaf_size(i)), PageSize::from_shift(g.shift), "{name} level {i}");
        }
        if let Some((n, size)) = F::contig(i) {
            assert!(g.leaf && n.is_power_of_two() && n > 1, "{name} level {i}: group of {n}");
            assert_eq!(size.bytes(), n as u64 * g.span(), "{name} level {i}: group size");
        }
    }
    let bits = l[0].shift + l[0].bits;
    let fmt = Format::from_arch_name(name).expect("a format's name is known");
    assert_eq!(fmt.va_bits(), bits, "{name}");
    assert!(F::MAX_PA.is_power_of_two() && F::MAX_PA >= 1 << 32, "{name}: max_pa");
}

fn check_round_trips<F: PageTableFormat>() {
    let name = F::ARCH_NAME;
    let n = F::LEVELS.len();
    // Tables: 4 KiB frames, below 4 GiB for the 32-bit short descriptors.
    let top_table = F::MAX_PA.min(1 << 32) - 0x1000;
    for level in 0..n - 1 {
        for pa in [0x1000, 0x1234_5000, top_table] {
            assert_eq!(
                F::decode(level, F::encode_table(level, pa)),
                Pte::Table(pa),
                "{name} level {level}"
            );
        }
    }
    let attrs = [
        Attrs(Attrs::USER),
        Attrs::user_rw(),
        Attrs::user_rw().with(Attrs::ACCESSED),
        Attrs::user_rw().with(Attrs::DIRTY | Attrs::ACCESSED),
        Attrs(Attrs::WRITABLE | Attrs::ACCESSED),
    ];
    for level in 0..n {
        assert_eq!(
            F::decode(level, 0),
            Pte::Invalid,
            "{name} level {level}: zero is invalid"
        );
        if !F::LEVELS[level].leaf {
            continue;
        }
        let mut sizes = vec![(F::leaf_size(level).bytes(), 0)];
        sizes.extend(F::contig(level).map(|(_, s)| (s.bytes(), Attrs::CONTIG)));
        for (size, contig) in sizes {
            for pa in [size, F::MAX_PA - size] {
                for a in attrs {
                    let a = a.with(contig);
                    let raw = F::encode_leaf(level, pa, a);
                    assert_eq!(
                        F::decode(level, raw),
                        Pte::Leaf { pa, attrs: a },
                        "{name} level {level}: leaf {pa:#x} {a:?}"
                    );
                }
            }
        }
    }
}

/// Random descriptors: a table pointer only above the last level, a leaf only at a leaf
/// level.
fn check_decode_by_level<F: PageTableFormat>() {
    let name = F::ARCH_NAME;
    let n = F::LEVELS.len();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for level in 0..n {
            match F::decode(level, x) {
                Pte::Table(_) => assert!(level + 1 < n, "{name}: table at the last level ({x:#x})"),
                Pte::Leaf { .. } => assert!(F::LEVELS[level].leaf, "{name}: leaf at level {level} ({x:#x})"),
                Pte::Invalid => {}
            }
        }
    }
}

#[test]
fn every_row_reaches_its_own_type() {
    for f in Format::ALL {
        let row = f.with(ReadRow);
        let via_enum = Row {
            name: f.arch_name(),
            aliases: f.aliases(),
            levels: f.levels(),
            max_pa: f.max_pa(),
            repeated: f.repeated(),
            contig: (0..f.levels().len()).map(|l| f.contig(l)).collect(),
        };
        assert_eq!(row, via_enum, "{f:?}");
        assert_eq!(Format::from_arch_name(row.name), Some(f));
        for alias in row.aliases {
            assert_eq!(Format::from_arch_name(alias), Some(f), "alias {alias}");
        }
    }
}

#[test]
fn every_format_keeps_the_contract() {
    for f in Format::ALL {
        f.with(Contract);
    }
}

#[test]
fn names_are_unique_and_documented() {
    let mut seen = BTreeSet::new();
    for f in Format::ALL {
        for name in std::iter::once(f.arch_name()).chain(f.aliases().iter().copied()) {
            assert!(seen.insert(name), "{name} names two formats");
        }
    }
    assert_eq!(Format::from_arch_name("sparc"), None);
    // docs/config.md's `arch` row lists every format's name.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/config.md");
    let doc = std::fs::read_to_string(path).expect("docs/config.md");
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `arch` |"))
        .expect("docs/config.md has the machine.arch row");
    let documented: BTreeSet<&str> = row.split('"').skip(1).step_by(2).collect();
    let names: BTreeSet<&str> = Format::ALL.iter().map(|f| f.arch_name()).collect();
    assert_eq!(
        documented, names,
        "docs/config.md's `arch` row against the formats table"
    );
}
