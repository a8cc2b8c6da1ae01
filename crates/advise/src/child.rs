//! Running the program natively one way (4 KiB pages, THP through glibc's tunable, THP
//! `always`), timing it (CPU time of the child from `wait4`'s rusage, and wall time) and
//! watching the page sizes it got in `/proc/PID/smaps_rollup` while it runs.
//!
//! - 4 KiB: `prctl(PR_SET_THP_DISABLE, 1)` in the child before `execve`. The flag is kept
//!   across `execve` and inherited by children (Linux `kernel/sys.c`, `prctl_set_thp_disable`
//!   sets `MMF_DISABLE_THP` in `mm->flags`, which `mm_init` copies through
//!   `MMF_INIT_MASK`; `__thp_vma_allowable_orders` refuses every order while it is set).
//! - THP (madvise): `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (glibc ≥ 2.35): malloc calls
//!   `madvise(MADV_HUGEPAGE)` on its heap and its mmapped chunks, which THP's `madvise`
//!   mode needs.
//! - THP `always`: the system setting; used only where it already is `always`.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use mmulab_probe::error::{ProbeError, Result};

/// How a run gets its pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Way {
    /// THP disabled for the process (`prctl(PR_SET_THP_DISABLE)`).
    Base4k,
    /// `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (malloc madvises its memory).
    GlibcHugetlbTunable,
    /// The system's THP `always` mode, no change to the program.
    ThpAlways,
    /// THP on the proposed regions only: the preload shim (shim.rs) madvises them.
    Proposal,
}

impl Way {
    /// A short label.
    pub fn label(self) -> &'static str {
        match self {
            Way::Base4k => "4K (prctl PR_SET_THP_DISABLE)",
            Way::GlibcHugetlbTunable => "THP (GLIBC_TUNABLES=glibc.malloc.hugetlb=1)",
            Way::ThpAlways => "THP (system mode always)",
            Way::Proposal => "THP on the proposal (LD_PRELOAD shim)",
        }
    }
}

/// One native run.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    /// How it got its pages.
    pub way: Way,
    /// User + system CPU time of the child, seconds (the time compared: on a loaded
    /// machine it excludes the time spent waiting for a CPU).
    pub cpu_s: f64,
    /// User CPU time, seconds.
    pub user_s: f64,
    /// System CPU time, seconds.
    pub sys_s: f64,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Largest `AnonHugePages` seen in smaps_rollup, bytes.
    pub anon_huge_max: u64,
    /// Largest `Anonymous` seen, bytes.
    pub anon_max: u64,
    /// Peak resident set, bytes: `VmHWM` of /proc/PID/status at the last sample (the
    /// high-water mark, so a peak between samples counts; growth within the last
    /// sampling interval before the program exits does not).
    pub rss_max: u64,
    /// smaps_rollup samples read while it ran.
    pub samples: u32,
    /// Minor page faults of the child (`ru_minflt` from `wait4`): every first touch of
    /// anonymous memory, a 2 MiB THP fault counting once.
    pub minflt: u64,
    /// Per mapping, at the largest `AnonHugePages` seen: the mappings that held huge
    /// pages or were madvised, largest first (at most [`MAPPINGS_KEPT`]; from
    /// `/proc/PID/smaps`, read again whenever the total grew by 5 % or more).
    pub huge_mappings: Vec<HugeMapping>,
}

/// One mapping of a native run: what smaps said of it at the run's peak.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HugeMapping {
    /// The mapped file or pseudo-name (`[heap]`), `anon` for anonymous memory.
    pub name: String,
    /// Size, bytes.
    pub size: u64,
    /// `AnonHugePages`, bytes.
    pub anon_huge: u64,
    /// Madvised `MADV_HUGEPAGE` (`VmFlags` `hg`).
    pub advised: bool,
}

/// Mappings kept per run.
pub const MAPPINGS_KEPT: usize = 8;

/// The mappings of smaps text that held huge pages or were madvised, largest
/// `AnonHugePages` first, at most [`MAPPINGS_KEPT`].
pub fn huge_mappings(smaps: &str) -> Vec<HugeMapping> {
    let mut v: Vec<HugeMapping> = Vec::new();
    for line in smaps.lines() {
        if let Some(m) = mmulab_trace::meta::Vma::parse(line) {
            v.push(HugeMapping {
                name: if m.name.is_empty() { "anon".into() } else { m.name },
                size: m.end - m.start,
                anon_huge: 0,
                advised: false,
            });
        } else if let Some(last) = v.last_mut() {
            let mut it = line.split_whitespace();
            match it.next() {
                Some("AnonHugePages:") => {
                    last.anon_huge = it.next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0) * 1024;
                }
                Some("VmFlags:") => last.advised = it.any(|f| f == "hg"),
                _ => {}
            }
        }
    }
    v.retain(|m| m.anon_huge > 0 || m.advised);
    v.sort_by(|a, b| b.anon_huge.cmp(&a.anon_huge).then(b.size.cmp(&a.size)));
    v.truncate(MAPPINGS_KEPT);
    v
}

/// How often smaps_rollup is read while the program runs, at most.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// The sampler sleeps at least this many times as long as its last read took: reading
/// smaps_rollup walks every page table of the process under its mmap lock, so for a
/// program of gigabytes of 4 KiB pages one read takes milliseconds of system time, more
/// with 4 KiB pages than with THP (each 2 MiB page is one entry). At 5 ms it took half a
/// core beside a 4 GiB `graph_bfs` and slowed the 4 KiB runs more than the THP ones; the
/// sampler's share of a CPU stays below 1/(1 + 50) ≈ 2 % (assumed small enough).
pub const SAMPLE_SLEEP_PER_READ: u32 = 50;

/// The sleep after a read that took `read`.
pub fn sample_sleep(read: Duration) -> Duration {
    SAMPLE_EVERY.max(read * SAMPLE_SLEEP_PER_READ)
}

/// `VmHWM` of /proc/PID/status text (peak resident set), bytes; 0 when absent (a
/// kernel thread, or the process between fork and exec).
pub fn vm_hwm(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The two smaps_rollup fields used, bytes: (`AnonHugePages`, `Anonymous`).
pub fn parse_rollup(text: &str) -> (u64, u64) {
    let mut out = (0, 0);
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let key = it.next().unwrap_or("");
        let kb: u64 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        match key {
            "AnonHugePages:" => out.0 = kb * 1024,
            "Anonymous:" => out.1 = kb * 1024,
            _ => {}
        }
    }
    out
}

/// Where the kernel compacts all memory on request (`sysctl_compaction_handler`: a write
/// compacts every zone of every node now; an action, not a setting: nothing to restore).
pub const COMPACT_MEMORY: &str = "/proc/sys/vm/compact_memory";

/// Prepares memory before a timed run, in two steps (docs/advise.md § Method, Protocol):
///
/// 1. compacts it, so that every THP run starts with the free 2 MiB blocks that compaction
///    can make, whatever the run before it left (a THP run right after a 4 KiB run
///    otherwise compacts in its own faults, THP `defrag` `madvise`: 0.10–0.13 s of system
///    time against 0.004 s after another THP run). Root only; 0.2 s here.
/// 2. touches `touch` bytes of fresh anonymous memory (madvised huge, one write per 4 KiB)
///    and frees them, so that the run that follows finds that much free memory its host
///    backs. In a guest whose balloon reports free pages (virtio free page reporting, at
///    order 9 here), a free 2 MiB block is handed back to the host about 2 s after it is
///    freed, and the next first touch of it pays host faults the guest counts as system
///    time: gups's THP run paid 1.43–1.56 s after a pause against 0.05–0.08 s right after
///    another run. Freed blocks go to the head of the free lists and the run's faults take
///    them first, within milliseconds. On bare metal the touch costs only its time.
///
/// Returns whether memory was compacted, and the bytes touched (0 when the mapping could
/// not be made: never an error; the protocol in the output says so).
pub fn prepare_memory(touch: u64) -> (bool, u64) {
    let compacted = std::fs::write(COMPACT_MEMORY, "1").is_ok();
    (compacted, pre_touch(touch))
}

/// Step 2 of [`prepare_memory`]: maps, touches and unmaps `bytes` (rounded up to 2 MiB).
fn pre_touch(bytes: u64) -> u64 {
    const HUGE: u64 = 2 << 20;
    let len = bytes.div_ceil(HUGE) * HUGE;
    if len == 0 {
        return 0;
    }
    // SAFETY: a private anonymous mapping of our own; no other code sees it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return 0;
    }
    // SAFETY: p..p+len is the mapping made above; madvise only advises, and a failure
    // (THP off) leaves 4 KiB pages, which back the same memory.
    unsafe { libc::madvise(p, len as usize, libc::MADV_HUGEPAGE) };
    let base = p as *mut u8;
    for off in (0..len).step_by(4096) {
        // SAFETY: off < len, inside the writable mapping.
        unsafe { std::ptr::write_volatile(base.add(off as usize), 1) };
    }
    // SAFETY: unmaps exactly the mapping made above.
    unsafe { libc::munmap(p, len as usize) };
    len
}

/// Bytes [`prepare_memory`] touches for a program whose warm-up run peaked at `anon`
/// bytes of anonymous memory: that and a quarter more (the runs differ a little) plus
/// 32 MiB, at most half of what the kernel calls available (never pressure memory for it).
pub fn touch_bytes(anon: u64, mem_available: Option<u64>) -> u64 {
    let want = anon + anon / 4 + (32 << 20);
    match mem_available {
        Some(a) => want.min(a / 2),
        None => want,
    }
}

/// `MemAvailable` of /proc/meminfo, bytes.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The command joined for messages.
pub fn shown(cmd: &[String]) -> String {
    cmd.join(" ")
}

/// Checks that the program exists and is executable (on PATH, or the path given).
pub fn check_command(cmd: &[String]) -> Result<()> {
    let Some(prog) = cmd.first() else {
        return Err(ProbeError::Invalid(
            "no command given: `mmulab advise -- CMD ARGS…`".into(),
        ));
    };
    let executable = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if prog.contains('/') {
        executable(std::path::Path::new(prog))
    } else {
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(prog))))
    };
    if found {
        Ok(())
    } else {
        Err(ProbeError::Invalid(format!(
            "command `{prog}` not found or not executable: give a program on PATH or its path (`mmulab advise -- ./prog ARGS`)"
        )))
    }
}

/// Runs `cmd` once the given way; a non-zero exit is an error naming its status and the
/// last lines the program wrote to stderr.
pub fn run(cmd: &[String], way: Way) -> Result<Run> {
    run_env(cmd, way, &[])
}

/// [`run`] with `env` set for the program besides what `way` sets (the shim's
/// `LD_PRELOAD` and region list for [`Way::Proposal`]).
pub fn run_env(cmd: &[String], way: Way, env: &[(String, String)]) -> Result<Run> {
    let Some(prog) = cmd.first() else {
        return Err(ProbeError::Invalid(
            "no command given: `mmulab advise -- CMD ARGS…`".into(),
        ));
    };
    let mut c = Command::new(prog);
    c.args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    match way {
        Way::Base4k => {
            // SAFETY: prctl is async-signal-safe; the closure touches no shared state.
            unsafe {
                c.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        Way::GlibcHugetlbTunable | Way::ThpAlways | Way::Proposal => {
            c.envs(way.env());
        }
    }
    c.envs(env.iter().map(|(k, v)| (k, v)));
    let t0 = Instant::now();
    let mut child = c.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ProbeError::Invalid(format!(
            "command `{prog}` not found: give a program on PATH or its path (`mmulab advise -- ./prog ARGS`)"
        )),
        std::io::ErrorKind::PermissionDenied => {
            ProbeError::Invalid(format!("command `{prog}` is not executable (permission denied)"))
        }
        _ => ProbeError::io(format!("cannot start `{prog}`"), e),
    })?;
    let pid = child.id();
    let mut err_pipe = child.stderr.take();
    let stderr_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    });
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || sample(pid, stop))
    };
    let mut status = 0i32;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child's pid with valid pointers. `child` is never waited on
    // through std afterwards (dropping a Child neither waits nor kills).
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
    let wall_s = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let sampled = sampler.join().unwrap_or(Err("the sampler thread panicked".into()));
    let stderr = stderr_reader.join().unwrap_or_default();
    if r < 0 {
        return Err(ProbeError::last_os(format!("waiting for `{prog}`")));
    }
    let st = ExitStatus::from_raw(status);
    if !st.success() {
        let text = String::from_utf8_lossy(&stderr);
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(ProbeError::Invalid(format!(
            "`{}` failed ({st}) in its {} run; advise times only programs that succeed{}",
            shown(cmd),
            way.label(),
            if tail.is_empty() {
                String::new()
            } else {
                format!("; its last stderr lines:\n  {}", tail.join("\n  "))
            }
        )));
    }
    let Sampled {
        huge: anon_huge_max,
        anon: anon_max,
        rss: rss_max,
        n: samples,
        mappings: huge_mappings,
    } = sampled.map_err(ProbeError::Unavailable)?;
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    let (user_s, sys_s) = (tv(ru.ru_utime), tv(ru.ru_stime));
    drop(child);
    Ok(Run {
        way,
        cpu_s: user_s + sys_s,
        user_s,
        sys_s,
        minflt: ru.ru_minflt.max(0) as u64,
        wall_s,
        anon_huge_max,
        anon_max,
        rss_max,
        samples,
        huge_mappings,
    })
}

/// What the sampler returns: the largest `AnonHugePages` and `Anonymous`, the number of
/// samples, and the mappings at the peak.
struct Sampled {
    huge: u64,
    anon: u64,
    rss: u64,
    n: u32,
    mappings: Vec<HugeMapping>,
}

/// Reads smaps_rollup of `pid` until `stop` or until it cannot be read (the process
/// ended), and the whole smaps whenever `AnonHugePages` grew by 5 % or more since it was
/// last read (a few reads per run). Returns the maxima and the number of samples, or an
/// error when /proc refused access (not merely a process that ended).
fn sample(pid: u32, stop: Arc<AtomicBool>) -> std::result::Result<Sampled, String> {
    let path = format!("/proc/{pid}/smaps_rollup");
    let status = format!("/proc/{pid}/status");
    let (mut huge, mut anon, mut rss, mut n) = (0u64, 0u64, 0u64, 0u32);
    let (mut mappings, mut mapped_at) = (Vec::new(), 0u64);
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(Sampled {
                huge,
                anon,
                rss,
                n,
                mappings,
            });
        }
        let t0 = Instant::now();
        let read = std::fs::read_to_string(&path);
        let took = t0.elapsed();
        match read {
            // Empty while the child is still between fork and exec, or already a zombie.
            Ok(text) if !text.is_empty() => {
                let (h, a) = parse_rollup(&text);
                // The high-water mark of the program's own address space (the exec'd
                // one: `wait4`'s ru_maxrss would also count the forked parent's pages,
                // `setmax_mm_hiwater_rss` in fs/exec.c `exec_mmap`), so peaks between
                // samples count; growth in the last interval before exit does not.
                if let Ok(st) = std::fs::read_to_string(&status) {
                    rss = rss.max(vm_hwm(&st));
                }
                if h > 0 && h >= mapped_at + mapped_at / 20 {
                    if let Ok(t) = std::fs::read_to_string(format!("/proc/{pid}/smaps")) {
                        mappings = huge_mappings(&t);
                        mapped_at = h;
                    }
                }
                huge = huge.max(h);
                anon = anon.max(a);
                n += 1;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(format!(
                    "{path} is unreadable ({e}): advise verifies page sizes there; run it as the program's user with /proc mounted"
                ))
            }
            Err(_) => {}
        }
        std::thread::sleep(sample_sleep(took));
    }
}

/// The system THP mode (`always`, `madvise`, `never`) or why it is unknown.
pub fn thp_mode() -> std::result::Result<String, String> {
    mmulab_probe::os::sysfs::thp_mode()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_rss_is_vm_hwm_in_bytes() {
        let st = "Name:\tx\nVmPeak:\t  20000 kB\nVmHWM:\t    1536 kB\nVmRSS:\t    1024 kB\n";
        assert_eq!(vm_hwm(st), 1536 * 1024);
        assert_eq!(vm_hwm("Name:\tkthreadd\n"), 0);
    }

    #[test]
    fn the_sampler_backs_off_as_reads_grow_slow() {
        // A fast read: every 5 ms. A 2 ms read (a large 4 KiB-page process): 100 ms.
        assert_eq!(sample_sleep(Duration::from_micros(20)), SAMPLE_EVERY);
        assert_eq!(sample_sleep(Duration::from_millis(2)), Duration::from_millis(100));
    }

    #[test]
    fn the_memory_touched_before_a_run_covers_the_warm_ups_peak_within_half_of_what_is_free() {
        // 1 GiB peak: 1 GiB + 256 MiB + 32 MiB = 1,312 MiB, when 10 GiB are available...
        assert_eq!(touch_bytes(1 << 30, Some(10 << 30)), 1312 << 20);
        // ...but never more than half of what is available (2 GiB: 1 GiB).
        assert_eq!(touch_bytes(1 << 30, Some(2 << 30)), 1 << 30);
        assert_eq!(touch_bytes(0, None), 32 << 20);
        // Touched in whole 2 MiB blocks: 3 MiB asked, 4 MiB mapped, touched and freed.
        assert_eq!(pre_touch(3 << 20), 4 << 20);
        assert_eq!(pre_touch(0), 0);
    }

    #[test]
    fn rollup_fields() {
        let t = "55-7f ---p 0 00:00 0 [rollup]\nRss: 1740 kB\nAnonymous: 116 kB\nAnonHugePages: 4096 kB\n";
        assert_eq!(parse_rollup(t), (4096 * 1024, 116 * 1024));
    }

    #[test]
    fn check_command_finds_programs_on_path_and_by_path() {
        assert!(check_command(&["sh".into()]).is_ok());
        assert!(check_command(&["/bin/sh".into()]).is_ok());
        let e = check_command(&["mmulab-no-such-program-xyz".into()]).unwrap_err();
        assert!(e.to_string().contains("not found"), "{e}");
        // A file that is not executable.
        let f = std::env::temp_dir().join(format!("mmulab-advise-noexec-{}", std::process::id()));
        std::fs::write(&f, "x").unwrap();
        assert!(check_command(&[f.display().to_string()]).is_err());
        let _ = std::fs::remove_file(&f);
        assert!(check_command(&[]).is_err());
    }

    #[test]
    fn a_missing_command_and_a_failing_one_are_clear_errors() {
        let e = run(&["mmulab-no-such-program-xyz".into()], Way::Base4k).unwrap_err();
        assert!(e.to_string().contains("not found"), "{e}");
        let e = run(&["sh".into(), "-c".into(), "echo boom >&2; exit 3".into()], Way::Base4k).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("exit status: 3") && s.contains("boom"), "{s}");
        assert!(run(&[], Way::Base4k).is_err());
    }
}

impl Way {
    /// The environment variables this way sets for the program: the glibc tunable (kept
    /// beside any `GLIBC_TUNABLES` the caller has) for [`Way::GlibcHugetlbTunable`], none
    /// for the others.
    pub fn env(self) -> Vec<(String, String)> {
        match self {
            Way::GlibcHugetlbTunable => {
                let t = match std::env::var("GLIBC_TUNABLES") {
                    Ok(v) if !v.is_empty() => format!("{v}:glibc.malloc.hugetlb=1"),
                    _ => "glibc.malloc.hugetlb=1".to_string(),
                };
                vec![("GLIBC_TUNABLES".into(), t)]
            }
            Way::Base4k | Way::ThpAlways | Way::Proposal => Vec::new(),
        }
    }
}

#[cfg(test)]
mod mapping_tests {
    use super::*;

    #[test]
    fn the_mappings_kept_are_those_with_huge_pages_or_madvised_largest_first() {
        let smaps = "7f0000000000-7f0040000000 rw-p 00000000 00:00 0 \n\
                     Size:            1048576 kB\nAnonHugePages:   1044480 kB\nVmFlags: rd wr mr mw me ac hg\n\
                     555555554000-555555600000 rw-p 00000000 00:00 0 [heap]\n\
                     AnonHugePages:      2048 kB\nVmFlags: rd wr mr mw me ac\n\
                     7f1000000000-7f1000200000 rw-p 00000000 00:00 0 \n\
                     AnonHugePages:         0 kB\nVmFlags: rd wr mr mw me ac hg\n\
                     7ffd1000-7ffd2000 rw-p 00000000 00:00 0 [stack]\nAnonHugePages:         0 kB\nVmFlags: rd wr\n";
        let m = huge_mappings(smaps);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(
            (m[0].name.as_str(), m[0].anon_huge, m[0].advised),
            ("anon", 1044480 << 10, true)
        );
        assert_eq!(
            (m[1].name.as_str(), m[1].anon_huge, m[1].advised),
            ("[heap]", 2 << 20, false)
        );
        assert_eq!((m[2].size, m[2].anon_huge, m[2].advised), (2 << 20, 0, true));
    }
}
