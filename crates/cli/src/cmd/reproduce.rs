//! `mmulab reproduce EXPERIMENT.toml`: run an experiment file (experiments/*.toml) on a
//! simulated machine and print, plot or export its result. Kinds: `tlb_test` (seed 002);
//! superpage policies (seed 001, `mmulab reproduce freebsd`, cmd/reproduce_os.rs).

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use mmulab_probe::tlb_test;
use mmulab_sim::reproduce;

/// Reproduce an experiment of the source documents (experiments/*.toml).
#[derive(clap::Args)]
#[command(after_help = "Forms:
  mmulab reproduce freebsd [--plot F.png|F.svg] [--json]
      seed 001's superpage-policy experiments (experiments/freebsd.toml, or the built-in copy
      when that file is not in the current directory): tables of the seed's figures against
      mmulab's; --plot draws huge-page coverage over time.
  mmulab reproduce freebsd --sensitivity [--json]
      the seed rows' sensitivity: each parameter that sets the magnitude (access_cycles,
      walk.mem_latency, os.fault_latency, the last-level TLB's entries) x1/2 and x2.
  mmulab reproduce kvm-split [--plot F.png|F.svg] [--json] [--eager-split-chunk-size G=SIZE]...
      seed 004's KVM eager stage-2 splitting: 64 GiB and 1 GiB memslots, backings 4K/THP/
      hugetlb 1G, granules 4K/16K/64K, enable dirty logging and KVM_CLEAR_DIRTY_LOG, the
      split walker today vs skip-level3 vs skip-children, beside the seed's savings
      (docs/kvm-split.md); --plot draws the savings; --eager-split-chunk-size 4K=1G sets a
      granule's chunk (0 or one of its block sizes: 4K 2M/1G, 16K 32M, 64K 512M).
  mmulab reproduce nested [--plot F.png|F.svg] [--json]
      nested (two-stage) translation on the model of this machine, an AMD EPYC Zen 4 core in a
      KVM guest: GUPS and a pointer chase, guest 4K/2M x host 4K/2M (walk references per TLB
      miss, translation cycles per reference), whether both stages need large pages, and a
      simulated probe of the virtualized core (docs/virtualization.md).
  mmulab reproduce numa-emu [--plot F.png|F.svg] [--json] [--quick]
      seed 003's NUMA emulation on the Raspberry Pi 5 model (cortex-a76-pi5, LPDDR4X
      lpddr4x-4267-pi5): default allocation against numa=fake=8 with interleave, 1 and 4
      threads, STREAM triad, pointer chase, GUPS, a cache-resident loop and their geometric
      mean (Geekbench-like), beside the seed's +6 % / +18 %; also the 4 GB board and THP
      (docs/numa.md); --quick runs an eighth of the size.
  mmulab reproduce v3d-capacity [--json]
      seed 000's GPU address-space capacity: how many BOs of 4 KiB and 400 KiB fit the
      V3D's 4 GiB space under the 128K, 4K and size-class alignment policies, allocated
      in the model, beside the seed's figures, with a sentence on every difference.
  mmulab reproduce v3d [--plot F.png|F.svg] [--json]
      seed 000's big/super pages on the Pi 4 and Pi 5 GPU: four GPU workloads, 4K-only
      PTEs against big/super pages, fresh and fragmented memory: coverage, GPU TLB
      misses, PTE fetches, flush cost, estimated GPU time, beside the seed's averages
      (docs/gpu.md); --plot draws the TLB misses.
  mmulab reproduce FILE.toml [--plot F.png|F.svg] [--json]
      an experiment file: a tlb_test experiment (experiments/cortex-a15-tlb-test.toml) prints
      its table and --plot draws PNG or SVG; a policy experiment (kind = \"os_policies\", with
      [[workload]] and [[machine]] tables, like experiments/freebsd.toml) runs as `freebsd`
      does. Every file declares its kind.")]
pub struct Args {
    /// `freebsd` (seed 001), `kvm-split` (seed 004), `nested`, `numa-emu` (seed 003),
    /// `v3d` or `v3d-capacity` (seed 000), all built in; or an experiment file
    /// (experiments/*.toml).
    #[arg(value_name = "freebsd|FILE")]
    pub file: PathBuf,
    /// Draw the result to FILE (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// `freebsd` only: vary each parameter that sets the seed rows' magnitude ×½ and ×2
    /// and print the change (docs/policies.md).
    #[arg(long, conflicts_with = "plot")]
    pub sensitivity: bool,
    /// `kvm-split` only: KVM's eager-split chunk size for a granule, GRANULE=SIZE (e.g.
    /// 4K=1G; 0 = off); SIZE must be a block size of the granule. Repeatable. Default: each
    /// granule's level-2 block (2M, 32M, 512M).
    #[arg(long, value_name = "GRANULE=SIZE")]
    pub eager_split_chunk_size: Vec<String>,
    /// `numa-emu` only: an eighth of the data and references (the test suite's size).
    #[arg(long)]
    pub quick: bool,
}

pub fn run(a: Args) -> Result<()> {
    if let Some(p) = &a.plot {
        mmulab_plot::Format::of_path(p).map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    if a.quick && a.file.as_os_str() != "numa-emu" {
        bail!("--quick belongs to `mmulab reproduce numa-emu`; drop it here");
    }
    // `freebsd` (seed 001, built in) unless a file of that name exists.
    if a.sensitivity {
        if a.file.as_os_str() != "freebsd" {
            bail!("--sensitivity is for `mmulab reproduce freebsd` only");
        }
        return super::reproduce_os::run_freebsd_sensitivity(a.json);
    }
    if a.file.as_os_str() == "freebsd" && !a.file.exists() {
        return super::reproduce_os::run_freebsd(a.plot.as_deref(), a.json);
    }
    // `kvm-split` (seed 004, built in) unless a file of that name exists.
    if a.file.as_os_str() == "kvm-split" && !a.file.exists() {
        return super::reproduce_kvm::run(a.plot.as_deref(), a.json, &a.eager_split_chunk_size);
    }
    if !a.eager_split_chunk_size.is_empty() {
        bail!("--eager-split-chunk-size belongs to `mmulab reproduce kvm-split`; drop it here");
    }
    // `nested` (built in) unless a file of that name exists.
    if a.file.as_os_str() == "nested" && !a.file.exists() {
        return super::reproduce_nested::run(a.plot.as_deref(), a.json);
    }
    // `numa-emu` (seed 003, built in) unless a file of that name exists.
    if a.file.as_os_str() == "numa-emu" && !a.file.exists() {
        return super::reproduce_numa::run(a.plot.as_deref(), a.json, a.quick);
    }
    // Seed 000 (GPU), built in the same way.
    if a.file.as_os_str() == "v3d-capacity" && !a.file.exists() {
        if a.plot.is_some() {
            bail!("v3d-capacity draws no picture; drop --plot");
        }
        return super::reproduce_gpu::run_capacity(a.json);
    }
    if a.file.as_os_str() == "v3d" && !a.file.exists() {
        return super::reproduce_gpu::run_v3d(a.plot.as_deref(), a.json);
    }
    // An experiment file runs as the kind it declares.
    let origin = a.file.display().to_string();
    let text = std::fs::read_to_string(&a.file).with_context(|| format!("cannot read experiment file {origin}"))?;
    match reproduce::experiment_kind(&text, &origin)?.as_str() {
        reproduce::KIND => return super::reproduce_os::run_text(&text, &origin, a.plot.as_deref(), a.json),
        "tlb_test" => {}
        other => bail!(
            "{origin}: experiment kind \"{other}\" is not known; use one of {}",
            reproduce::KINDS.join(", ")
        ),
    }
    let x = tlb_test::load(&a.file)?;
    crate::signals::stop_on_interrupt();
    let ticker = crate::progress::Ticker::start(&format!("reproduce {}", a.file.display()), Box::new(|| None));
    let r = tlb_test::run(&x, a.file.parent()).with_context(|| format!("running {}", a.file.display()));
    drop(ticker);
    let r = r?;
    if let Some(p) = &a.plot {
        crate::output::write_with(p, |path| tlb_test::plot(&r, path))?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{}", tlb_test::table(&r));
        if !r.complete {
            // Each run: a warm-up lap of twice its pages, then the timed loads.
            let refs = r.runs.iter().map(|run| 2 * run.pages as u64 + x.loads as u64).sum();
            println!("\n{}", crate::signals::incomplete_line(refs));
        }
    }
    Ok(())
}
