//! The native side: a scenario runs in a child process (this executable re-run with
//! [`CHILD_ENV`] set, so its address space is fresh and shares no page with the
//! parent), which stops at each marked point while the parent reads the kernel's
//! counters and the child's smaps. Only libc calls run in the child between the
//! baseline and the end (no heap allocation, a pre-touched stack), so the counters move
//! for the scenario's operations alone.
//!
//! Protocol (one line per message, child → parent on one pipe; one byte `G` parent →
//! child on the other): `R` ready, `A <region> <address>` a region's address,
//! `M <pid>` a marked point, `E <pid>` the end, `X <message>` an error.

use crate::host;
use crate::script::{Adv, Op, Script, PAGE};
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable that makes this executable a scenario's child:
/// `<command fd>,<ack fd>`; the script's text is in [`SCRIPT_ENV`].
pub const CHILD_ENV: &str = "MMULAB_KERNEL_CHECK_CHILD";
/// The script's text, for the child.
pub const SCRIPT_ENV: &str = "MMULAB_KERNEL_CHECK_SCRIPT";

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Turns SIGINT and SIGTERM into an error of the running scenario (its settings are then
/// restored by [`host::Settings`]' drop, the child killed), instead of death.
pub fn catch_interrupts() {
    // SAFETY: installs a handler that only stores to an atomic; no SA_RESTART, so a
    // blocked read returns EINTR and the loop sees the flag.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

/// True once SIGINT or SIGTERM arrived (after [`catch_interrupts`]).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// If this process is a scenario's child, runs the scenario and exits; else returns.
/// Call first thing in `main` of every executable that runs the check.
pub fn child_entry() {
    let Ok(fds) = std::env::var(CHILD_ENV) else { return };
    let code = match run_child(&fds) {
        Ok(()) => 0,
        Err(_) => 1,
    };
    // SAFETY: ends the child without running the parent's atexit handlers.
    unsafe { libc::_exit(code) }
}

fn send(fd: i32, args: std::fmt::Arguments<'_>) {
    let mut buf = [0u8; 256];
    let mut c = std::io::Cursor::new(&mut buf[..]);
    let _ = c.write_fmt(args);
    let _ = c.write_all(b"\n");
    let n = c.position() as usize;
    // SAFETY: writes an initialised stack buffer to a pipe.
    unsafe { libc::write(fd, buf.as_ptr().cast(), n) };
}

fn wait_go(fd: i32) -> Result<(), ()> {
    let mut b = 0u8;
    // SAFETY: reads one byte into a stack variable.
    let n = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
    if n == 1 && b == b'G' {
        Ok(())
    } else {
        Err(())
    }
}

#[inline(never)]
fn touch_stack() -> u64 {
    let mut a = [0u8; 96 << 10];
    for i in (0..a.len()).step_by(PAGE as usize) {
        // SAFETY: a volatile store into a local array, so the stack pages are faulted now.
        unsafe { std::ptr::write_volatile(&mut a[i], 1) };
    }
    std::hint::black_box(&a);
    a[0] as u64
}

fn run_child(fds: &str) -> Result<(), ()> {
    let (cmd, ack) = fds.split_once(',').ok_or(())?;
    let (cmd, ack): (i32, i32) = (cmd.parse().map_err(|_| ())?, ack.parse().map_err(|_| ())?);
    let text = std::env::var(SCRIPT_ENV).map_err(|_| ())?;
    let script = match Script::parse("child", &text) {
        Ok(s) => s,
        Err(e) => {
            send(ack, format_args!("X {e}"));
            return Err(());
        }
    };
    let mut bases = vec![0u64; script.regions.len()];
    let mut lens = vec![0u64; script.regions.len()];
    touch_stack();
    send(ack, format_args!("R"));
    wait_go(cmd)?;
    let r = exec_ops(&script.ops, &mut bases, &mut lens, cmd, ack, false);
    if let Err(e) = r {
        send(ack, format_args!("X {e}"));
        return Err(());
    }
    // SAFETY: getpid has no preconditions.
    send(ack, format_args!("E {}", unsafe { libc::getpid() }));
    wait_go(cmd)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Runs `ops` in this process (the scenario's child, or its forked child).
fn exec_ops(
    ops: &[Op],
    bases: &mut [u64],
    lens: &mut [u64],
    cmd: i32,
    ack: i32,
    forked: bool,
) -> Result<(), &'static str> {
    let mut i = 0;
    while i < ops.len() {
        // SAFETY (every block below): system calls on the scenario's own mappings, whose
        // addresses and lengths the script's checks and the mmap results bound.
        match ops[i] {
            Op::Map { r, len, at } => {
                let rw = libc::PROT_READ | libc::PROT_WRITE;
                let fl = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
                let p = match at {
                    None => unsafe { libc::mmap(std::ptr::null_mut(), len as usize, rw, fl, -1, 0) },
                    Some(off) => unsafe {
                        let res_len = (len + (4 << 20)) as usize;
                        let res = libc::mmap(
                            std::ptr::null_mut(),
                            res_len,
                            libc::PROT_NONE,
                            fl | libc::MAP_NORESERVE,
                            -1,
                            0,
                        );
                        if res == libc::MAP_FAILED {
                            return Err("mmap of the reservation failed");
                        }
                        let base = ((res as u64 + (2 << 20) - 1) & !((2 << 20) - 1)) + off;
                        libc::mmap(base as *mut _, len as usize, rw, fl | libc::MAP_FIXED, -1, 0)
                    },
                };
                if p == libc::MAP_FAILED {
                    return Err("mmap failed");
                }
                bases[r] = p as u64;
                lens[r] = len;
                send(ack, format_args!("A {r} {}", p as u64));
            }
            Op::Madvise { r, off, len, adv } => {
                let a = match adv {
                    Adv::Hugepage => libc::MADV_HUGEPAGE,
                    Adv::NoHugepage => libc::MADV_NOHUGEPAGE,
                    Adv::DontNeed => libc::MADV_DONTNEED,
                    Adv::Collapse => 25, // MADV_COLLAPSE
                };
                let rc = unsafe { libc::madvise((bases[r] + off) as *mut _, len as usize, a) };
                if rc != 0 && adv != Adv::Collapse {
                    return Err("madvise failed");
                }
                if adv == Adv::Collapse {
                    send(ack, format_args!("C {r} {}", if rc == 0 { 0 } else { errno() }));
                }
            }
            Op::Touch { r, off, len, write } => {
                let mut a = bases[r] + off;
                while a < bases[r] + off + len {
                    let p = a as *mut u8;
                    unsafe {
                        if write {
                            std::ptr::write_volatile(p, 1);
                        } else {
                            std::ptr::read_volatile(p);
                        }
                    }
                    a += PAGE;
                }
            }
            Op::Munmap { r, off, len } => {
                if unsafe { libc::munmap((bases[r] + off) as *mut _, len as usize) } != 0 {
                    return Err("munmap failed");
                }
                if off + len == lens[r] {
                    lens[r] = off;
                }
            }
            Op::Mprotect { r, off, len, writable } => {
                let prot = if writable {
                    libc::PROT_READ | libc::PROT_WRITE
                } else {
                    libc::PROT_READ
                };
                if unsafe { libc::mprotect((bases[r] + off) as *mut _, len as usize, prot) } != 0 {
                    return Err("mprotect failed");
                }
            }
            Op::Mremap { r, len } => {
                let p = unsafe { libc::mremap(bases[r] as *mut _, lens[r] as usize, len as usize, 0) };
                if p == libc::MAP_FAILED {
                    return Err("mremap could not grow the mapping in place");
                }
                lens[r] = len;
            }
            Op::Shrink => {
                // echo 2 > /proc/sys/vm/drop_caches: drop_slab() runs every shrinker, the
                // deferred split one (mm/huge_memory.c deferred_split_scan) included.
                let path = c"/proc/sys/vm/drop_caches";
                let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY) };
                if fd < 0 {
                    return Err("cannot open /proc/sys/vm/drop_caches (needs root)");
                }
                let n = unsafe { libc::write(fd, b"2".as_ptr().cast(), 1) };
                unsafe { libc::close(fd) };
                if n != 1 {
                    return Err("writing 2 to /proc/sys/vm/drop_caches failed");
                }
            }
            Op::Fork => {
                let end = i + ops[i..].iter().position(|o| *o == Op::End).unwrap_or(ops.len() - i);
                let pid = unsafe { libc::fork() };
                if pid < 0 {
                    return Err("fork failed");
                }
                if pid == 0 {
                    let r = exec_ops(&ops[i + 1..end], bases, lens, cmd, ack, true);
                    unsafe { libc::_exit(r.is_err() as i32) };
                }
                let mut st = 0;
                unsafe { libc::waitpid(pid, &mut st, 0) };
                if st != 0 {
                    return Err("the forked child failed");
                }
                i = end;
            }
            Op::End => {}
            Op::Mark => {
                if !forked {
                    send(ack, format_args!("M {}", unsafe { libc::getpid() }));
                    wait_go(cmd).map_err(|_| "the parent went away")?;
                }
            }
        }
        i += 1;
    }
    Ok(())
}

/// What one region looked like in smaps at a marked point: kB resident, kB in PMD
/// huge pages, VMAs overlapping it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionView {
    /// `Rss` (kB) of the VMAs inside the region (clipped to it when a VMA extends
    /// beyond: smaps has no finer account; such a mark is not compared for Rss).
    pub rss_kb: u64,
    /// `AnonHugePages` (kB).
    pub anon_huge_kb: u64,
    /// VMAs overlapping the region.
    pub vmas: u64,
    /// True if a VMA overlapping the region extends beyond it (the kernel merged it
    /// with a neighbouring mapping of the process): its `Rss` then counts the
    /// neighbour's pages, and is shown but not compared.
    pub merged: bool,
}

/// A native run's result.
#[derive(Clone, Debug, Default)]
pub struct NativeRun {
    /// Counter deltas from the baseline to the end.
    pub counters: BTreeMap<String, u64>,
    /// Region addresses.
    pub bases: Vec<u64>,
    /// Region lengths (after mremap).
    pub lens: Vec<u64>,
    /// Per marked point (the end included), per region.
    pub marks: Vec<Vec<RegionView>>,
    /// True if a counter moved in the quiet windows before or after the run (another
    /// process's activity).
    pub disturbed: bool,
}

fn read_line(fd: i32) -> Result<String, String> {
    let mut line = Vec::new();
    loop {
        let mut b = 0u8;
        // SAFETY: reads one byte into a stack variable.
        let n = unsafe { libc::read(fd, (&mut b as *mut u8).cast(), 1) };
        if interrupted() {
            return Err("interrupted (SIGINT/SIGTERM)".into());
        }
        match n {
            1 if b == b'\n' => return Ok(String::from_utf8_lossy(&line).into_owned()),
            1 => line.push(b),
            0 => return Err("the scenario's process ended early (killed?)".into()),
            _ if errno() == libc::EINTR => continue,
            _ => return Err(format!("reading the scenario's pipe: errno {}", errno())),
        }
    }
}

fn views(pid: i32, bases: &[u64], lens: &[u64]) -> Result<Vec<RegionView>, String> {
    let sm = host::smaps(pid)?;
    Ok(bases
        .iter()
        .zip(lens)
        .map(|(&b, &l)| {
            let mut v = RegionView::default();
            for s in sm.iter().filter(|s| s.start < b + l && b < s.end) {
                v.rss_kb += s.rss_kb;
                v.anon_huge_kb += s.anon_huge_kb;
                v.vmas += 1;
                v.merged |= s.start < b || s.end > b + l;
            }
            v
        })
        .collect())
}

fn delta(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    b.iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(a.get(k).copied().unwrap_or(0))))
        .collect()
}

/// Runs `script` (whose text is `text`) natively; `exe` is an executable whose `main`
/// calls [`child_entry`].
pub fn run(script: &Script, text: &str, exe: &std::path::Path) -> Result<NativeRun, String> {
    let mut cmd_p = [0i32; 2];
    let mut ack_p = [0i32; 2];
    // SAFETY: pipe fills two-element arrays; fcntl marks the parent's ends close-on-exec.
    unsafe {
        if libc::pipe(cmd_p.as_mut_ptr()) != 0 || libc::pipe(ack_p.as_mut_ptr()) != 0 {
            return Err("pipe failed".into());
        }
        libc::fcntl(cmd_p[1], libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(ack_p[0], libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let spawned = std::process::Command::new(exe)
        .env(CHILD_ENV, format!("{},{}", cmd_p[0], ack_p[1]))
        .env(SCRIPT_ENV, text)
        .stdin(std::process::Stdio::null())
        .spawn();
    // SAFETY: closes the child's ends in the parent.
    unsafe {
        libc::close(cmd_p[0]);
        libc::close(ack_p[1]);
    }
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            // SAFETY: closes the parent's ends.
            unsafe {
                libc::close(cmd_p[1]);
                libc::close(ack_p[0]);
            }
            return Err(format!("cannot start {}: {e}", exe.display()));
        }
    };
    let r = drive(script, cmd_p[1], ack_p[0]);
    if r.is_err() {
        let _ = child.kill();
    }
    let _ = child.wait();
    // SAFETY: closes the parent's ends.
    unsafe {
        libc::close(cmd_p[1]);
        libc::close(ack_p[0]);
    }
    r
}

fn go(fd: i32) {
    // SAFETY: writes one byte from a static.
    unsafe { libc::write(fd, b"G".as_ptr().cast(), 1) };
}

fn drive(script: &Script, cmd: i32, ack: i32) -> Result<NativeRun, String> {
    let n = script.regions.len();
    let mut out = NativeRun {
        bases: vec![0; n],
        lens: vec![0; n],
        ..Default::default()
    };
    let line = read_line(ack)?;
    if line != "R" {
        return Err(format!("the scenario's process said \"{line}\""));
    }
    // A scenario that runs the shrinker first empties the deferred split queue of other
    // processes' folios, so that its own `shrink` splits only the scenario's.
    if script.ops.contains(&Op::Shrink) {
        std::fs::write("/proc/sys/vm/drop_caches", "2")
            .map_err(|e| format!("cannot write /proc/sys/vm/drop_caches ({e}; the shrink operation needs root)"))?;
    }
    // A quiet window before the baseline: a counter moving while the child waits is
    // another process's activity.
    let pre = host::counters();
    std::thread::sleep(std::time::Duration::from_millis(10));
    let before = host::counters();
    let busy_before = delta(&pre, &before).values().any(|&v| v != 0);
    let mut own = BTreeMap::<String, u64>::new();
    go(cmd);
    loop {
        let line = read_line(ack)?;
        let w: Vec<&str> = line.splitn(3, ' ').collect();
        match w[0] {
            "A" if w.len() == 3 => {
                let r: usize = w[1].parse().map_err(|_| "bad region")?;
                out.bases[r] = w[2].parse().map_err(|_| "bad address")?;
                out.lens[r] = script
                    .ops
                    .iter()
                    .find_map(|o| match *o {
                        Op::Map { r: x, len, .. } if x == r => Some(len),
                        _ => None,
                    })
                    .unwrap_or(0);
            }
            "C" => {}
            "M" | "E" if w.len() == 2 => {
                let pid: i32 = w[1].parse().map_err(|_| "bad pid")?;
                let lens = lens_now(script, &out.lens, out.marks.len());
                if w[0] == "E" {
                    let end = host::counters();
                    out.marks.push(views(pid, &out.bases, &lens)?);
                    let mut d = delta(&before, &end);
                    for (k, v) in &own {
                        if let Some(x) = d.get_mut(k) {
                            *x = x.saturating_sub(*v);
                        }
                    }
                    out.counters = d;
                    go(cmd);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    let quiet = host::counters();
                    out.disturbed = busy_before || delta(&end, &quiet).values().any(|&v| v != 0);
                    return Ok(out);
                }
                let a = host::counters();
                out.marks.push(views(pid, &out.bases, &lens)?);
                let b = host::counters();
                for (k, v) in delta(&a, &b) {
                    *own.entry(k).or_default() += v;
                }
                go(cmd);
            }
            "X" => return Err(format!("the scenario failed natively: {}", w[1..].join(" "))),
            _ => return Err(format!("the scenario's process said \"{line}\"")),
        }
    }
}

/// The regions' lengths at the `mark`-th marked point (mremap grows them).
fn lens_now(script: &Script, lens: &[u64], mark: usize) -> Vec<u64> {
    let mut l = lens.to_vec();
    let mut marks = 0;
    for o in &script.ops {
        match *o {
            Op::Mark if marks == mark => break,
            Op::Mark => marks += 1,
            Op::Mremap { r, len } => l[r] = len,
            Op::Munmap { r, off, len } if off + len == l[r] => l[r] = off,
            _ => {}
        }
    }
    l
}
