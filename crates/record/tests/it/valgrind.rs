//! The recorder as a library call (skipped where Valgrind is not installed): a program's
//! references land in a readable .mlt with its VMAs and page size, the counts returned
//! match the file, and a program Valgrind cannot start is a typed error (Valgrind says why
//! on stderr, or in the messages the error carries).

use std::time::Duration;

use mmulab_record::{RecordError, RecordOptions, Recorder};
use mmulab_trace::summary::summarize_file;
use mmulab_trace::TraceOptions;

fn options(command: &[&str]) -> RecordOptions {
    RecordOptions {
        command: command.iter().map(|s| s.to_string()).collect(),
        level: 3,
        maps_interval: Duration::from_millis(20),
        stdout_to_stderr: true,
        max_refs: None,
        env: Vec::new(),
    }
}

#[test]
fn a_recording_is_a_readable_trace_with_its_vmas() {
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
