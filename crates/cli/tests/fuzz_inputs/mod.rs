//! The fuzzer's inputs (crates/cli/tests/fuzz_cli.rs): a seeded stream of mutated catalog
//! machine configs, `--set` strings and workload specs. Case `i` depends only on the seed
//! and `i`.

use mmulab_sim::catalog;

pub mod commands;

pub struct Rng(u64);

impl Rng {
    fn new(seed: u64, i: u64) -> Rng {
        let mut r = Rng(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next();
        r
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

pub const ODD_STRINGS: &[&str] = &[
    "",
    " ",
    "0",
    "-1",
    "4K",
    "2M",
    "1G",
    "3K",
    "16TiB",
    "1PiB",
    "16EiB",
    "0GiB",
    "-1GiB",
    "1.5GiB",
    "1e99",
    "18446744073709551615",
    "18446744073709551616",
    "0x10",
    "nan",
    "inf",
    "x86_64",
    "aarch64",
    "armv7",
    "armv7-lpae",
    "default",
    "cortex-a15",
    "skylake",
    "../../etc/passwd",
    "/dev/zero",
    "nosuch",
    "lru",
    "random",
    "fixed",
    "thp",
    "none",
    "always",
    "\u{1F600}",
    "é",
    "4K\u{0}",
    "a=b",
    "[1,2]",
    "{}",
    "'",
    "\"",
];
pub const NUMBERS: &[i64] = &[
    0,
    1,
    -1,
    2,
    3,
    7,
    64,
    4096,
    1 << 20,
    1 << 32,
    1 << 40,
    i64::MAX,
    i64::MIN,
    1_000_000_000,
];
pub const FLOATS: &[f64] = &[
    0.0,
    -0.0,
    0.5,
    1.5,
    -0.5,
    1e300,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.95,
    1.0,
];
pub const SIZES: &[&str] = &[
    "0",
    "1",
    "4K",
    "1M",
    "1GiB",
    "16TiB",
    "1PiB",
    "16EiB",
    "18446744073709551615",
    "-4K",
];

pub fn odd_value(r: &mut Rng) -> toml::Value {
    use toml::Value as V;
    match r.below(9) {
        7 | 8 => V::Integer(1 << r.below(12)),
        0 => V::Integer(*r.pick(NUMBERS)),
        1 => V::Float(*r.pick(FLOATS)),
        2 => V::String(r.pick(ODD_STRINGS).to_string()),
        3 => V::Boolean(r.chance(50)),
        4 => V::Array((0..r.below(4)).map(|_| V::Integer(*r.pick(NUMBERS))).collect()),
        5 => V::Array(vec![V::String(r.pick(ODD_STRINGS).to_string())]),
        _ => V::Table(toml::Table::new()),
    }
}

#[derive(Clone, Debug)]
pub enum Seg {
    Key(String),
    Index(usize),
}

pub fn leaves(v: &toml::Value, path: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    match v {
        toml::Value::Table(t) => {
            for (k, c) in t {
                path.push(Seg::Key(k.clone()));
                out.push(path.clone());
                leaves(c, path, out);
                path.pop();
            }
        }
        toml::Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                path.push(Seg::Index(i));
                out.push(path.clone());
                leaves(c, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

pub fn at<'a>(v: &'a mut toml::Value, path: &[Seg]) -> Option<&'a mut toml::Value> {
    path.iter().try_fold(v, |cur, s| match (cur, s) {
        (toml::Value::Table(t), Seg::Key(k)) => t.get_mut(k),
        (toml::Value::Array(a), Seg::Index(i)) => a.get_mut(*i),
        _ => None,
    })
}

pub fn show(path: &[Seg]) -> String {
    path.iter()
        .map(|s| match s {
            Seg::Key(k) => k.clone(),
            Seg::Index(i) => i.to_string(),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Risky values at fixed places (the limits of issue 18 item 4 and 5 among them).
pub fn targeted(r: &mut Rng) -> (String, toml::Value) {
    use toml::Value as V;
    let size = V::String(r.pick(SIZES).to_string());
    let n = V::Integer(*r.pick(NUMBERS));
    let tlb = format!("tlb.{}", r.below(3));
    match r.below(12) {
        0 => ("memory.size".into(), size),
        1 => ("walk.pwc_entries".into(), V::Array(vec![n.clone(), n])),
        2 => ("machine.cores".into(), n),
        3 => (format!("{tlb}.entries"), n),
        4 => (format!("{tlb}.ways"), n),
        5 => (
            "machine.name".into(),
            V::String(r.pick(&["nosuch", "skylake", "cortex-a5", "", "."]).to_string()),
        ),
        6 => (
            "os.policy".into(),
            V::String(
                r.pick(&["thp", "reservation", "mthp", "khugepaged", "fixed", "nosuch"])
                    .to_string(),
            ),
        ),
        7 => ("os.page_size".into(), size),
        8 => ("os.tick_interval".into(), n),
        9 => ("memory.age.used".into(), V::Float(*r.pick(FLOATS))),
        10 => (
            format!("{tlb}.page_sizes"),
            V::Array(vec![V::String(r.pick(SIZES).to_string())]),
        ),
        _ => ("walk.mem_latency".into(), n),
    }
}

pub fn set_path(root: &mut toml::Value, dotted: &str, v: toml::Value) {
    let keys: Vec<&str> = dotted.split('.').collect();
    let mut cur = root;
    for (i, k) in keys.iter().enumerate() {
        let last = i + 1 == keys.len();
        cur = match cur {
            toml::Value::Table(t) if last => {
                t.insert(k.to_string(), v);
                return;
            }
            toml::Value::Table(t) => t.entry(k.to_string()).or_insert(toml::Value::Table(toml::Table::new())),
            toml::Value::Array(a) => match k.parse::<usize>().ok().and_then(|n| a.get_mut(n)) {
                Some(e) if last => {
                    *e = v;
                    return;
                }
                Some(e) => e,
                None => return,
            },
            _ => return,
        };
    }
}

/// Mutates a machine's TOML; returns the description of what was done.
/// One generic mutation at `p`: `kind` 0 deletes it, 1 gives it an odd value, 2 adds an
/// unknown key beside it. Returns what it did.
pub fn generic(root: &mut toml::Value, p: &[Seg], kind: u8, r: &mut Rng) -> String {
    let (parent, last) = p.split_at(p.len() - 1);
    match kind {
        0 => {
            if let Some(v) = at(root, parent) {
                match (v, &last[0]) {
                    (toml::Value::Table(t), Seg::Key(k)) => drop(t.remove(k)),
                    (toml::Value::Array(a), Seg::Index(i)) => drop(a.remove(*i)),
                    _ => {}
                }
            }
            format!("delete {}", show(p))
        }
        1 => {
            let v = odd_value(r);
            let did = format!("{} = {v}", show(p));
            if let Some(slot) = at(root, p) {
                *slot = v;
            }
            did
        }
        _ => {
            if let Some(toml::Value::Table(t)) = at(root, parent) {
                t.insert("unknown_key".into(), odd_value(r));
            }
            format!("unknown key under {}", show(parent))
        }
    }
}

pub fn mutate(root: &mut toml::Value, r: &mut Rng) -> String {
    let mut did = Vec::new();
    let n = *r.pick(&[1, 1, 1, 2, 2, 3]);
    for _ in 0..n {
        let mut paths = Vec::new();
        leaves(root, &mut Vec::new(), &mut paths);
        let p = r.pick(&paths).clone();
        match r.below(6) {
            0 => did.push(generic(root, &p, 0, r)),
            1 | 2 => did.push(generic(root, &p, 1, r)),
            3 => did.push(generic(root, &p, 2, r)),
            _ if r.chance(10) => {
                // Many cores times a large level: host memory grows with the product. (Sizes
                // either fit easily or far exceed the worker's limit, so a case is quick.)
                let tlb = r.below(3);
                let cores = *r.pick(&[16i64, 4096]);
                let entries = *r.pick(&[1i64 << 10, 1 << 20, 1 << 24]);
                for (path, v) in [
                    ("machine.cores".to_string(), cores),
                    (format!("tlb.{tlb}.entries"), entries),
                    (format!("tlb.{tlb}.ways"), 4),
                ] {
                    did.push(format!("{path} = {v}"));
                    set_path(root, &path, toml::Value::Integer(v));
                }
            }
            _ => {
                let (path, v) = targeted(r);
                did.push(format!("{path} = {v}"));
                set_path(root, &path, v);
            }
        }
    }
    did.join("; ")
}

pub const SET_KEYS: &[&str] = &[
    "memory.size",
    "machine.name",
    "machine.cores",
    "machine.arch",
    "machine.seed",
    "walk.pwc_entries",
    "walk.mem_latency",
    "os.policy",
    "os.page_size",
    "os.tick_interval",
    "os.thp.enabled",
    "os.reclaim.enabled",
    "os.reservation.size",
    "os.mthp.sizes",
    "memory.age",
    "memory.age.used",
    "tlb.0.entries",
    "tlb.0.ways",
    "tlb.l2.entries",
    "tlb.nosuch.entries",
    "tlb.99.ways",
    "tlb.0",
    "tlb",
    "machine",
    "",
    ".",
    "a..b",
    "os.",
    "memory.size.x",
    "tlb.0.replacement",
    "tlb.0.next",
    "tlb.0.page_sizes",
    "os.khugepaged.max_ptes_none",
];
pub const SET_VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "9223372036854775807",
    "18446744073709551616",
    "1e400",
    "nan",
    "inf",
    "true",
    "\"\"",
    "[]",
    "[1e9]",
    "[4294967296, 1]",
    "{}",
    "{used=2.0}",
    "{used=0.5, target_free_2m_share=nan}",
    "16TiB",
    "1PiB",
    "16EiB",
    "4K",
    "2M",
    "3K",
    "skylake",
    "nosuch",
    "./x.toml",
    "[[]]",
    "'",
    "\"x",
    "=",
    "x=y",
    "[\"4K\",\"2M\"]",
    "\u{1F600}",
];

/// A `--set KEY=VALUE` string.
pub fn set_string(r: &mut Rng) -> String {
    if r.chance(5) {
        return r.pick(SET_VALUES).to_string(); // no `=` at all, mostly
    }
    if r.chance(40) {
        return r.pick(PLAUSIBLE_SETS).to_string();
    }
    format!("{}={}", r.pick(SET_KEYS), r.pick(SET_VALUES))
}

/// Valid-looking `--set`s, so that cases also get past validation into a run.
pub const PLAUSIBLE_SETS: &[&str] = &[
    "os.policy=thp",
    "os.policy=reservation",
    "os.policy=mthp",
    "os.policy=khugepaged",
    "os.policy=fixed",
    "os.page_size=2M",
    "os.page_size=1M",
    "os.page_size=64K",
    "memory.size=64MiB",
    "memory.size=1GiB",
    "memory.size=4GiB",
    "os.reclaim.enabled=true",
    "machine.cores=4",
    "walk.pwc_entries=[]",
    "walk.pwc_entries=[1,2]",
    "memory.age={used=0.5, target_free_2m_share=0.1, movable=0.5}",
    "os.thp.defrag=always",
    "tlb.0.entries=12",
    "tlb.0.ways=4",
    "tlb.0.replacement=random",
    "tlb.0.replacement=plru",
    "tlb.0.unsupported=bypass",
    "os.tick_interval=1",
    "machine.cores=4096",
    "tlb.0.entries=1048576",
    "os.khugepaged.enabled=true",
    "os.khugepaged.scan_period=1",
    "machine.seed=7",
];

pub const WL_KEYS: &[&str] = &[
    "table",
    "updates",
    "refs",
    "seed",
    "base",
    "pages",
    "page",
    "offset",
    "size",
    "stride",
    "procs",
    "jobs",
    "small",
    "large",
    "large_size",
    "unmap",
    "bits",
    "nosuch",
    "",
    "refs ",
];
pub const WL_VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "4K",
    "64K",
    "1M",
    "3M",
    "1GiB",
    "1TiB",
    "1EiB",
    "16EiB",
    "100M",
    "1G",
    "1T",
    "1P",
    "18446744073709551615",
    "18446744073709551616",
    "0x0",
    "0x7fffffffffff",
    "0xffffffffffffffff",
    "0xfffffffffffff000",
    "0x1000",
    "",
    " ",
    "x",
    "1.5",
    "1e9",
    "-0",
    "0x",
    "4096",
    "65536",
    "1000000000",
    "32",
    "64",
    "47",
];

/// A workload spec of docs/workloads.md, valid or not.
pub fn workload_spec(r: &mut Rng) -> String {
    let name = *r.pick(&["gups", "chase", "stride", "seq", "build", "nosuch", "", "GUPS"]);
    let mut parts = Vec::new();
    let required = match name {
        "gups" => Some("table"),
        "chase" | "stride" => Some("pages"),
        "seq" => Some("size"),
        _ => None,
    };
    if let Some(k) = required.filter(|_| r.chance(85)) {
        parts.push(format!("{k}={}", r.pick(WL_VALUES)));
    }
    for _ in 0..r.below(4) {
        match r.below(10) {
            0 => parts.push(r.pick(WL_KEYS).to_string()),
            1 => parts.push(String::new()),
            _ => parts.push(format!("{}={}", r.pick(WL_KEYS), r.pick(WL_VALUES))),
        }
    }
    match r.below(20) {
        0 => name.to_string(),
        1 => format!("{name}:{}:", parts.join(",")),
        _ => format!("{name}:{}", parts.join(",")),
    }
}

/// Small workloads the config and set cases run (the runner caps every run at `REF_CAP`
/// references, crates/cli/tests/fuzz_cli.rs).
pub const SMALL: &[&str] = &[
    "seq:size=256K",
    "gups:table=1M,refs=5000",
    "chase:pages=300",
    "stride:pages=600,refs=3000",
    "build:procs=2,refs=3000,large_size=256K",
];

#[derive(Debug)]
pub enum Case {
    Config {
        machine: String,
        toml: toml::Table,
        what: String,
        wl: String,
    },
    Set {
        machine: String,
        sets: Vec<String>,
        wl: String,
    },
    Workload {
        machine: String,
        spec: String,
    },
}

impl Case {
    pub fn describe(&self) -> String {
        match self {
            Case::Config { machine, what, wl, .. } => format!("config {machine}: {what}; workload {wl}"),
            Case::Set { machine, sets, wl } => {
                format!(
                    "set: sim --machine {machine} --set {} --workload {wl}",
                    sets.join(" --set ")
                )
            }
            Case::Workload { machine, spec } => format!("workload: sim --machine {machine} --workload {spec}"),
        }
    }
}

pub fn case(seed: u64, i: u64) -> Case {
    let mut r = Rng::new(seed, i);
    let names = catalog::names();
    let machine = r.pick(&names).to_string();
    let wl = r.pick(SMALL).to_string();
    match i % 3 {
        0 => {
            let text = catalog::get(&machine).expect("catalog entry");
            let mut root = toml::Value::Table(toml::from_str::<toml::Table>(text).expect("catalog TOML"));
            let what = mutate(&mut root, &mut r);
            let toml::Value::Table(toml) = root else { unreachable!() };
            Case::Config {
                machine,
                toml,
                what,
                wl,
            }
        }
        1 => Case::Set {
            machine,
            sets: (0..1 + r.below(3)).map(|_| set_string(&mut r)).collect(),
            wl,
        },
        _ => Case::Workload {
            machine,
            spec: workload_spec(&mut r),
        },
    }
}
