//! The recorder as a library call (skipped where Valgrind is not installed): a program's
//! references land in a readable .mlt with its VMAs and page size, the counts returned
//! match the file, and a program Valgrind cannot start is a typed error (Valgrind says why
//! on stderr, or in the messages the error carries).

use std::time::Duration;

use mmulab_record::{Backend, RecordError, RecordOptions, Recorder};
use mmulab_trace::summary::summarize_file;
use mmulab_trace::TraceOptions;

fn options(command: &[&str]) -> RecordOptions {
    RecordOptions {
        command: command.iter().map(|s| s.to_string()).collect(),
        level: 3,
        maps_interval: Duration::from_millis(20),
        stdout_to_stderr: true,
        stdout_null: false,
        max_refs: None,
        env: Vec::new(),
    }
}

#[test]
fn a_recording_is_a_readable_trace_with_its_vmas() {
    let _one = crate::one_at_a_time();
    let Ok(rec) = Recorder::new() else {
        eprintln!("valgrind not installed: skipped");
        return;
    };
    let path = std::env::temp_dir().join(format!("mmulab-record-lib-{}.mlt", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    let mut calls = 0;
    let r = rec
        .record(&options(&["/bin/true"]), file, &mut |_| calls += 1, Box::new(|| None))
        .unwrap();
    assert!(r.exit_status.success());
    assert!(r.references > 10_000 && r.references == r.loads + r.stores + r.ifetches);
    assert_eq!(calls as u64, r.references >> 16, "progress every 65,536 references");
    assert_eq!(r.bytes, std::fs::metadata(&path).unwrap().len());
    let (s, err) = summarize_file(&path, &TraceOptions::default(), &mut |_, _| true).unwrap();
    assert!(err.is_none());
    assert_eq!((s.references, s.loads, s.ifetches), (r.references, r.loads, r.ifetches));
    assert!(s.markers.contains_key("page_size"));
    assert!(r.vma_samples >= 1 && s.vmas == r.vmas_last_sample && s.vmas > 0);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_program_valgrind_cannot_start_is_a_typed_error_with_its_messages() {
    let _one = crate::one_at_a_time();
    let Ok(rec) = Recorder::new() else {
        return;
    };
    let e = rec
        .record(
            &options(&["/nonexistent/prog"]),
            std::io::sink(),
            &mut |_| {},
            Box::new(|| None),
        )
        .unwrap_err();
    match &e {
        RecordError::ValgrindFailed { command, status, .. } => {
            assert_eq!(command, "/nonexistent/prog");
            assert!(!status.success());
        }
        other => panic!("{other}"),
    }
}

/// A C program that stores to 16,384 lines of its own, forks, and whose child stores to
/// 131,072 lines of another buffer before the parent has waited for it.
fn forking_program(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let src = dir.join("fork.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\n#include <unistd.h>\n#include <sys/wait.h>\n\
         int main(void) {\n\
           volatile char *a = malloc(1 << 20);\n\
           for (int i = 0; i < (1 << 20); i += 64) a[i] = 1;\n\
           pid_t p = fork();\n\
           if (p == 0) { volatile char *b = malloc(8 << 20); for (int i = 0; i < (8 << 20); i += 64) b[i] = 1; _exit(0); }\n\
           waitpid(p, 0, 0);\n\
           return 0;\n\
         }\n",
    )
    .unwrap();
    let exe = dir.join("fork");
    let ok = std::process::Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(exe)
}

#[test]
fn a_forked_childs_references_never_join_the_parents_trace() {
    let _one = crate::one_at_a_time();
    let Ok(rec) = Recorder::new() else {
        eprintln!("valgrind not installed: skipped");
        return;
    };
    let dir = std::env::temp_dir().join(format!("mmulab-record-fork-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let Some(exe) = forking_program(&dir) else {
        eprintln!("no C compiler: skipped");
        return;
    };
    let exe = exe.to_string_lossy().into_owned();
    let mut backends = vec![("lackey", Backend::Lackey)];
    match mmulab_record::mmtrace::build(&dir.join("mmtrace")) {
        Ok(lib_dir) => backends.push((
            "mmtrace",
            Backend::Mmtrace {
                lib_dir,
                sampling: None,
            },
        )),
        Err(e) => eprintln!("mmtrace not built ({e}): Lackey only"),
    }
    for (name, backend) in backends {
        let r = rec
            .record_with(
                &backend,
                &options(&[&exe]),
                std::io::sink(),
                &mut |_| {},
                Box::new(|| None),
            )
            .unwrap();
        assert!(r.exit_status.success(), "{name}");
        // The parent's 16,384 stores and the C library's start-up are recorded; the
        // child's 131,072 are not (merged, they were: the parent's address space then
        // held the child's buffer).
        assert!(r.stores >= 16_384 && r.stores < 100_000, "{name}: {} stores", r.stores);
        if name == "mmtrace" {
            assert_eq!(r.forks, Some(1), "mmtrace counts the fork");
        } else {
            assert_eq!(r.forks, None, "Lackey does not count forks");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 47 item 1: an mmtrace recording sampled in windows carries the first write of
/// every page written between its windows as a touch, once per page. The program writes
/// one byte to each of the 16,384 pages of a 64 MiB buffer, then reads them all again:
/// with windows of 1,000 references every 1,000,000, at most 1,000 of each million land
/// in a window, so at least 16,384 − 17 × 1,000 / … ≥ 16,000 pages are first written in a
/// gap (one touch each), and the second pass, over pages already written, adds none.
#[test]
fn a_sampled_mmtrace_recording_carries_each_page_first_written_between_windows_once() {
    let _one = crate::one_at_a_time();
    let Ok(rec) = Recorder::new() else {
        eprintln!("valgrind not installed: skipped");
        return;
    };
    let dir = std::env::temp_dir().join(format!("mmulab-record-touch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("pages.c");
    std::fs::write(
        &src,
        "#include <stdlib.h>\n\
         int main(void) {\n\
           volatile char *a = malloc(64 << 20);\n\
           for (long i = 0; i < (64L << 20); i += 4096) a[i] = 1;\n\
           long s = 0;\n\
           for (long i = 0; i < (64L << 20); i += 4096) s += a[i];\n\
           return s == 16384 ? 0 : 1;\n\
         }\n",
    )
    .unwrap();
    let exe = dir.join("pages");
    if !std::process::Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("no C compiler: skipped");
        return;
    }
    let lib_dir = match mmulab_record::mmtrace::build(&dir.join("mmtrace")) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("mmtrace not built ({e}): skipped");
            return;
        }
    };
    let backend = Backend::Mmtrace {
        lib_dir,
        sampling: Some(mmulab_record::mmtrace::Sampling {
            on: 1_000,
            period: 1_000_000,
        }),
    };
    let path = dir.join("pages.mlt");
    let exe = exe.to_string_lossy().into_owned();
    let r = rec
        .record_with(
            &backend,
            &options(&[&exe]),
            std::fs::File::create(&path).unwrap(),
            &mut |_| {},
            Box::new(|| None),
        )
        .unwrap();
    assert!(r.exit_status.success());
    let (s, err) = summarize_file(&path, &TraceOptions::default(), &mut |_, _| true).unwrap();
    assert!(err.is_none());
    let touches = s.control.touch;
    // The buffer's pages, and at most a few thousand of the C library's and the stack's.
    assert!((16_000..16_384 + 4_000).contains(&touches), "{touches} touches");
    // The buffer is an allocation of its own: glibc maps 64 MiB and malloc's 16-byte
    // header, rounded up to a page, with one mmap (the `allocations` section).
    let meta = mmulab_trace::TraceMeta {
        sections: mmulab_trace::format::mlt::read_sections(&path).unwrap(),
        ..Default::default()
    };
    let allocs = meta.allocations();
    assert!(allocs.iter().any(|&(a, e)| e - a == (64 << 20) + 4096), "{allocs:x?}");
    let _ = std::fs::remove_dir_all(&dir);
}
