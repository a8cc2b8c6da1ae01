//! Which machine advise predicts for (`advise::machine`): this machine probed, or a
//! machine file given with `--machine`, kept in the cache directory with its fault costs
//! and calibrated runtime model, which are measured again when missing, stale, or asked
//! for (`--calibrate`).

use std::path::PathBuf;

use mmulab_probe::error::{ProbeError, Result};

use super::{cache, calibrate, faults, predict, Options};

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Probes this machine (the standard probe) into a cache entry.
pub fn probe_machine(id: &str, progress: &mut dyn FnMut(&str)) -> Result<cache::MachineCache> {
    progress("probing this machine's TLBs (cached afterwards)");
    let mut target = mmulab_probe::target::native::NativeTarget::new(true);
    let cfg = mmulab_probe::probe::ProbeConfig::standard();
    let report = mmulab_probe::probe::run(&mut target, &cfg, &mut |_, _| {})?;
    if report.levels.is_empty() {
        return Err(ProbeError::Unavailable(
            "the probe found no TLB level on this machine (noise?); rerun `mmulab advise --reprobe` when it is quieter"
                .into(),
        ));
    }
    let hv = report.hypervisor.as_ref();
    Ok(cache::MachineCache {
        version: cache::VERSION,
        cpu_id: id.to_string(),
        machine_toml: mmulab_probe::probe::machine::machine_toml(&report),
        hypervisor: hv.is_some_and(|h| h.present),
        hypervisor_vendor: hv.and_then(|h| h.vendor.clone()),
        probe_levels: serde_json::to_value(&report.levels).unwrap_or_default(),
        probed_at: now_s(),
        model: None,
        fault_costs: None,
        thp: None,
    })
}

/// A cache entry from a machine config file given by the user (`--machine`).
pub fn given_machine(id: &str, path: &std::path::Path) -> Result<cache::MachineCache> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ProbeError::io(format!("reading --machine {}", path.display()), e))?;
    // Checked now, so that a bad file is named here rather than at the first simulation.
    mmulab_sim::config::from_toml(&text, Some(path), &[])
        .map_err(|e| ProbeError::Invalid(format!("--machine {}: {e}", path.display())))?;
    let hv = mmulab_probe::probe::hypervisor::detect();
    Ok(cache::MachineCache {
        version: cache::VERSION,
        cpu_id: id.to_string(),
        machine_toml: format!("# from {} (mmulab advise --machine)\n{text}", path.display()),
        hypervisor: hv.present,
        hypervisor_vendor: hv.vendor.clone(),
        probe_levels: serde_json::Value::Null,
        probed_at: now_s(),
        model: None,
        fault_costs: None,
        thp: None,
    })
}

/// A `--machine` entry's text without its first line (`# from PATH`, which names the file
/// as it was given).
pub(crate) fn given_body(text: &str) -> Option<&str> {
    text.strip_prefix("# from ")
        .and_then(|t| t.split_once('\n'))
        .map(|(_, body)| body)
}

/// Whether a machine config text has a `[vm]` table.
fn has_vm(text: &str) -> bool {
    text.parse::<toml::Table>().is_ok_and(|t| t.contains_key("vm"))
}

/// The machine text to simulate for a cache entry: in a guest, with a `[vm]` section
/// unless the machine has its own, backed as the probe found ([`predict::host_backing`]).
/// Returns the text, whether it is a guest, and the backing added (`None`: not a guest, or
/// the machine file's own `[vm]`).
pub fn machine_of(c: &cache::MachineCache) -> (String, bool, Option<predict::HostBacking>) {
    if has_vm(&c.machine_toml) {
        return (c.machine_toml.clone(), true, None);
    }
    if !c.hypervisor {
        return (c.machine_toml.clone(), false, None);
    }
    let vendor = mmulab_probe::os::perf::cpu_vendor();
    let s2 = predict::stage2_for(std::env::consts::ARCH, vendor.as_deref());
    let hb = predict::host_backing(&c.probe_levels);
    (
        predict::machine_text(&c.machine_toml, Some((s2, hb.backing))),
        true,
        Some(hb),
    )
}

/// The cached machine with a calibrated model (probing and calibrating as needed).
pub fn machine(opts: &Options, progress: &mut dyn FnMut(&str)) -> Result<(cache::MachineCache, PathBuf, bool)> {
    let dir = match &opts.cache_dir {
        Some(d) => d.clone(),
        None => cache::dir()?,
    };
    let id = cache::cpu_id();
    let path = cache::path_in(&dir, &id);
    let (mut c, reused) = match &opts.machine {
        Some(file) => {
            let mut c = given_machine(&id, file)?;
            // The same machine given again (wherever the file is named from) keeps its
            // calibrated model and fault costs: calibration takes a quiet machine.
            let same = cache::load(&path)?.filter(|old| given_body(&old.machine_toml) == given_body(&c.machine_toml));
            let reused = same.is_some();
            if let Some(old) = same {
                c.model = old.model;
                c.fault_costs = old.fault_costs;
            }
            cache::store(&path, &c)?;
            (c, reused)
        }
        None => cache::load_or_probe(&path, opts.reprobe, || probe_machine(&id, progress))?,
    };
    let thp_now = cache::thp_settings();
    if !opts.calibrate {
        if let Some(why) = cache::mismatch(&c, &path, &id, thp_now.as_deref()) {
            return Err(ProbeError::Invalid(why));
        }
    }
    if let (Some(m), false) = (&c.model, opts.calibrate) {
        let refit = m.refit_if_old().map_err(|e| {
            ProbeError::Invalid(format!(
                "refitting the cached runtime model in {}: {e}; run `mmulab advise --calibrate`",
                path.display()
            ))
        })?;
        if let Some(m) = refit {
            progress("refitting the cached runtime model from its stored points (new model version)");
            c.model = Some(m);
            cache::store(&path, &c)?;
        }
    }
    // A cache probed before the p99 of a fault was measured is measured again (0.2 s).
    if c.fault_costs.as_ref().is_none_or(|f| f.p99_ns_4k.is_none()) || opts.calibrate {
        progress("measuring page-fault costs (cached afterwards)");
        c.fault_costs = Some(faults::measure(3)?);
        c.thp = thp_now.clone();
        cache::store(&path, &c)?;
    }
    if c.model.is_none() || opts.calibrate {
        let (text, nested, _) = machine_of(&c);
        progress("calibrating the runtime model (cached afterwards)");
        c.model = Some(calibrate::calibrate(&text, nested, opts.calibration_repeats, progress)?);
        c.thp = thp_now.clone();
        cache::store(&path, &c)?;
    }
    Ok((c, path, reused))
}
