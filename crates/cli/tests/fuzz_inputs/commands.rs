//! The fuzzer's cases for the newer commands (issue 51 item 9), run through the real
//! binary: sweep specs and output paths, sweep journals torn or padded with garbage, GPU
//! profiles and GPU traces, DRAM profiles and request streams, and `[vm]`, `[caches]`,
//! `[numa]` and `[dram]` values. Any case may send stdout to /dev/full. Case `i` depends
//! only on the seed and `i`.

use super::{generic, leaves, odd_value, Rng, NUMBERS, ODD_STRINGS, SMALL};

/// One command to run in a fresh directory holding `files`.
pub struct CmdCase {
    /// What the case is, for the findings.
    pub desc: String,
    /// `mmulab` arguments.
    pub args: Vec<String>,
    /// Files to write in the case's directory first (name, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    /// Directories to create first (an output path that is a directory).
    pub dirs: Vec<String>,
    /// stdout to /dev/full.
    pub full: bool,
    /// A journal case: the results must equal the clean run's (`Oracle::Journal`).
    pub journal: bool,
}

/// A small valid sweep spec: 3 points over a small workload.
pub const SWEEP: &str = "[sweep]\nmachine = \"skylake\"\nworkload = \"chase:pages=300,refs=3000\"\n[params]\n\"tlb.stlb.entries\" = [768, 1536, 3072]\n";

const PARAMS: &[(&str, &str)] = &[
    ("tlb.stlb.entries", "[768, 1536, 2048]"),
    ("os.policy", "[\"fixed\", \"linux-thp\"]"),
    ("os.page_size", "[\"4K\", \"2M\"]"),
    ("machine", "[\"skylake\", \"zen2\", \"nonexistent\"]"),
    (
        "workload",
        "[\"chase:pages=300,refs=2000\", \"gups:table=1M,refs=2000\"]",
    ),
    ("trace", "[\"missing.trace\"]"),
    ("memory.size", "[\"1GiB\", \"16TiB\"]"),
    ("machine.cores", "[1, 2]"),
    ("walk.pwc_entries", "[[4, 4, 4], [0]]"),
];

const OUTPUTS: &[&str] = &[
    "r.csv",
    "r.parquet",
    "nodir/r.csv",
    "isdir.csv",
    "/proc/r.csv",
    "r.txt",
    "",
];

const GPU_KEYS: &[&str] = &[
    "kernel_page",
    "pages",
    "cpu",
    "gpu",
    "mmu.tlb_entries",
    "mmu.tlb_ways",
    "mmu.ptec_lines",
    "mmu.ptec_ways",
    "mmu.ptec_cycles",
    "mmu.fetch_cycles",
    "mmu.flush_cycles",
];

const DRAM_KEYS: &[&str] = &[
    "channels",
    "ranks",
    "bank_groups",
    "banks_per_group",
    "rows",
    "columns",
    "bus_bits",
    "burst_length",
    "mapping",
    "row_policy",
    "clock_mhz",
    "timing.cl",
    "timing.trcd",
    "timing.trefi",
    "timing.trfc",
    "timing.tfaw",
];

const SECTION_SETS: &[&str] = &[
    "vm.enabled",
    "vm.backing",
    "vm.memory",
    "vm.pwc_entries",
    "vm.base_cycles",
    "caches.mlp",
    "caches.memory_latency",
    "caches.l1d.size",
    "caches.l1d.line",
    "caches.l2.ways",
    "caches.l2.replacement",
    "caches.l3.shared",
    "caches.l3.size",
    "numa.fake",
    "numa.policy",
    "numa.nodes",
    "numa.weights",
    "numa.cpus",
    "dram.profile",
    "machine.clock_mhz",
];

const SECTION_MACHINES: &[&str] = &[
    "skylake-caches",
    "neoverse-n1-caches",
    "cortex-a76-pi5",
    "cortex-a72-pi4",
    "skylake",
];

/// A DRAM request stream of `n` lines as `mmulab dram --generate seq` writes it.
fn stream(n: u64) -> String {
    (0..n).map(|i| format!("0x{:x} READ {i}\n", i * 64)).collect()
}

/// Mutates a TOML document: a deleted key, an odd value, an unknown key, or an odd value
/// at one of `keys`.
fn mutate(root: &mut toml::Value, r: &mut Rng, keys: &[&str]) -> String {
    let mut did = Vec::new();
    for _ in 0..1 + r.below(3) {
        let mut paths = Vec::new();
        leaves(root, &mut Vec::new(), &mut paths);
        if paths.is_empty() {
            break;
        }
        let p = r.pick(&paths).clone();
        match r.below(5) {
            k @ 0..=2 => did.push(generic(root, &p, k as u8, r)),
            _ => {
                let key = *r.pick(keys);
                let v = if r.chance(60) {
                    toml::Value::Integer(*r.pick(NUMBERS))
                } else {
                    odd_value(r)
                };
                did.push(format!("{key} = {v}"));
                super::set_path(root, key, v);
            }
        }
    }
    did.join("; ")
}

fn toml_text(root: &toml::Value) -> Vec<u8> {
    toml::to_string(root).unwrap_or_default().into_bytes()
}

/// Line `i` dropped (`kind` 0), duplicated (1) or swapped with another (2); what was done.
fn edit_line(lines: &mut Vec<String>, i: usize, kind: usize, r: &mut Rng) -> String {
    match kind {
        0 => {
            lines.remove(i);
            format!("drop line {i}")
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
            format!("duplicate line {i}")
        }
        _ => {
            let j = r.below(lines.len());
            lines.swap(i, j);
            format!("swap lines {i} {j}")
        }
    }
}

/// One of `garbage` inserted at line `i`; what was done.
fn insert_garbage(lines: &mut Vec<String>, i: usize, garbage: &[&str], r: &mut Rng) -> String {
    let g = *r.pick(garbage);
    lines.insert(i, g.to_string());
    format!("insert {g:?} at line {i}")
}

/// Mutates text line by line: lines dropped, duplicated, swapped, tokens replaced by odd
/// strings or numbers, garbage lines, a torn end.
fn mutate_lines(text: &str, r: &mut Rng) -> (Vec<u8>, String) {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut did = Vec::new();
    for _ in 0..1 + r.below(3) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let i = r.below(lines.len());
        match r.below(7) {
            k @ 0..=2 => did.push(edit_line(&mut lines, i, k, r)),
            3 | 4 => {
                let mut toks: Vec<String> = lines[i].split(' ').map(String::from).collect();
                let t = r.below(toks.len());
                let v = if r.chance(50) {
                    r.pick(ODD_STRINGS).to_string()
                } else {
                    r.pick(NUMBERS).to_string()
                };
                did.push(format!("line {i} token {t} = '{v}'"));
                toks[t] = v;
                lines[i] = toks.join(" ");
            }
            5 => did.push(insert_garbage(
                &mut lines,
                i,
                &["\u{0}\u{1}\u{ff}", "{\"id\":", "garbage", "   ", "#", "0x"],
                r,
            )),
            _ => {
                let mut all = lines.join("\n").into_bytes();
                let cut = r.below(all.len().max(1));
                all.truncate(cut);
                return (all, format!("{}; torn at byte {cut}", did.join("; ")));
            }
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    (out.into_bytes(), did.join("; "))
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

pub fn case(seed: u64, i: u64) -> CmdCase {
    let mut r = Rng::new(seed ^ 0xC0DE, i);
    let mut c = CmdCase {
        desc: String::new(),
        args: Vec::new(),
        files: Vec::new(),
        dirs: Vec::new(),
        full: r.chance(10),
        journal: false,
    };
    match i % 7 {
        0 => {
            let mut text = format!(
                "[sweep]\nmachine = \"skylake\"\nworkload = \"{}\"\n[params]\n",
                r.pick(SMALL)
            );
            for _ in 0..1 + r.below(2) {
                let (k, v) = r.pick(PARAMS);
                text += &format!("\"{k}\" = {v}\n");
            }
            let mut root = toml::Value::Table(toml::from_str(&text).unwrap_or_default());
            let what = if r.chance(70) {
                mutate(
                    &mut root,
                    &mut r,
                    &[
                        "sweep.mode",
                        "sweep.output",
                        "sweep.set",
                        "sweep.cores",
                        "sweep.interleave",
                    ],
                )
            } else {
                "unmutated".into()
            };
            c.files.push(("spec.toml".into(), toml_text(&root)));
            c.dirs.push("isdir.csv".into());
            let out = *r.pick(OUTPUTS);
            c.args = s(&["sweep", "spec.toml"]);
            if !out.is_empty() {
                c.args.extend(s(&["-o", out]));
            }
            if r.chance(30) {
                c.args.push("--json".into());
            }
            if r.chance(20) {
                c.args.extend(s(&["--jobs", *r.pick(&["0", "1", "3"])]));
            }
            c.desc = format!(
                "sweep spec {what} -o {out:?}: {}",
                String::from_utf8_lossy(&c.files[0].1).replace('\n', " | ")
            );
        }
        1 => {
            // The journal of a clean run of SWEEP, damaged; the fuzzer puts it in place.
            c.journal = true;
            c.full = false;
            c.files.push(("spec.toml".into(), SWEEP.as_bytes().to_vec()));
            c.args = s(&["sweep", "spec.toml", "-o", "r.csv", "--json"]);
            c.desc = "journal".into();
        }
        2 => {
            let name = *r.pick(&["pi4-v3d", "pi5-v3d", "mali-g57"]);
            let text =
                std::fs::read_to_string(format!("{}/../../machines/gpu/{name}.toml", env!("CARGO_MANIFEST_DIR")))
                    .expect("GPU profile");
            let mut root = toml::Value::Table(toml::from_str(&text).expect("GPU profile TOML"));
            let what = mutate(&mut root, &mut r, GPU_KEYS);
            c.files.push(("gpu.toml".into(), toml_text(&root)));
            let wl = *r.pick(&[
                "vertex-buffer:buffers=2,bytes=64K,draws=2,frames=1",
                "texture:textures=2",
            ]);
            c.args = s(&[
                "sim",
                "--gpu",
                "gpu.toml",
                "--gpu-workload",
                wl,
                "--set",
                "memory.size=256MiB",
            ]);
            c.desc = format!("gpu profile {name}: {what}; {wl}");
        }
        3 => {
            let text = std::fs::read_to_string(format!(
                "{}/../../tests/data/gpu/two-super.gput",
                env!("CARGO_MANIFEST_DIR")
            ))
            .expect("GPU trace");
            let (bytes, what) = mutate_lines(&text, &mut r);
            c.files.push(("t.gput".into(), bytes));
            let profile = *r.pick(&["pi4-v3d", "pi5-v3d", "mali-g57"]);
            c.args = s(&[
                "sim",
                "--gpu",
                profile,
                "--gpu-trace",
                "t.gput",
                "--set",
                "memory.size=256MiB",
            ]);
            c.desc = format!("gpu trace on {profile}: {what}");
        }
        4 => {
            let name = *r.pick(&["ddr4-3200", "ddr5-4800", "lpddr4x-4267-pi5"]);
            let text = std::fs::read_to_string(format!(
                "{}/../../machines/dram/{name}.toml",
                env!("CARGO_MANIFEST_DIR")
            ))
            .expect("DRAM profile");
            let mut root = toml::Value::Table(toml::from_str(&text).expect("DRAM profile TOML"));
            let what = mutate(&mut root, &mut r, DRAM_KEYS);
            c.files.push(("dram.toml".into(), toml_text(&root)));
            c.files.push(("s.trace".into(), stream(200).into_bytes()));
            c.args = s(&["dram", "s.trace", "--profile", "dram.toml"]);
            if r.chance(30) {
                c.args.push("--json".into());
            }
            c.desc = format!("dram profile {name}: {what}");
        }
        5 => {
            let (bytes, what) = mutate_lines(&stream(50), &mut r);
            c.files.push(("s.trace".into(), bytes));
            let profile = *r.pick(&["ddr4-3200", "lpddr4x-4267-pi5"]);
            c.args = s(&["dram", "s.trace", "--profile", profile]);
            if r.chance(30) {
                c.args.push("--json".into());
            }
            c.desc = format!("dram stream on {profile}: {what}");
        }
        _ => {
            let machine = *r.pick(SECTION_MACHINES);
            c.args = s(&["sim", "--machine", machine, "--workload", *r.pick(SMALL)]);
            if r.chance(50) {
                c.args.extend(s(&["--set", "vm.enabled=true"]));
            }
            for _ in 0..1 + r.below(3) {
                let key = *r.pick(SECTION_SETS);
                let v = if r.chance(50) {
                    r.pick(ODD_STRINGS).to_string()
                } else {
                    odd_value(&mut r).to_string()
                };
                c.args.extend(["--set".to_string(), format!("{key}={v}")]);
            }
            c.desc = format!("sections: sim {}", c.args[1..].join(" "));
        }
    }
    c
}

/// The damaged journal of journal case `i`: the clean run's `text` with lines dropped,
/// duplicated, swapped, garbage lines or a torn end.
pub fn damage_journal(seed: u64, i: u64, text: &str) -> (Vec<u8>, String) {
    let mut r = Rng::new(seed ^ 0x10_0A1, i);
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut did = Vec::new();
    for _ in 0..1 + r.below(3) {
        if lines.is_empty() {
            break;
        }
        let i = r.below(lines.len());
        match r.below(5) {
            k @ 0..=2 => did.push(edit_line(&mut lines, i, k, &mut r)),
            3 => did.push(insert_garbage(
                &mut lines,
                i,
                &["\u{0}\u{1}", "{\"id\":", "garbage", "", "[]", "{}", "null"],
                &mut r,
            )),
            _ => {
                let cut = r.below(lines[i].len().max(1));
                lines[i].truncate(cut);
                did.push(format!("cut line {i} at byte {cut}"));
            }
        }
    }
    let mut out = lines.join("\n");
    if r.chance(70) {
        out.push('\n');
    }
    (out.into_bytes(), format!("journal: {}", did.join("; ")))
}
