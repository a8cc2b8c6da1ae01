//! The Ray executor reports the references of points that ran in other processes
//! (issue #24: a Ray sweep's progress line showed 0 references, because the count a
//! sweep shows was the process-wide counter of simulations run *in this process*).
//!
//! No Ray here: the executor's interpreter is a stand-in script that answers as
//! `python3 -m mmulab.sweep_ray` does (one JSON row a line on stdout), so the test runs
//! without Python or a cluster.

use mmulab_sweep::{references_reported, references_simulated, Executor, Point, Ray, Row};
use std::os::unix::fs::PermissionsExt;

/// A row of `index` whose statistics say `references` (as `Point::run` flattens them).
fn row_line(index: usize, references: Option<u64>) -> String {
    let stats = match references {
        Some(n) => vec![("references".to_string(), serde_json::json!(n))],
        None => vec![],
    };
    let row = Row {
        id: format!("p{index}"),
        index,
        params: vec![],
        error: references.is_none().then(|| "failed".to_string()),
        seconds: 0.0,
        stats,
        config_hash: String::new(),
        complete: true,
    };
    serde_json::to_string(&row).unwrap()
}

#[test]
fn rows_from_ray_tasks_add_their_references_to_the_sweep_count() {
    let dir = std::env::temp_dir().join(format!("mmulab-ray-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("fake-python");
    // Reads the points from stdin (as the driver does), then prints three rows: two
    // finished points of 1,000 and 234 references, and a failed point (no statistics).
    let body = format!(
        "#!/bin/sh\ncat >/dev/null\necho '{}'\necho '{}'\necho '{}'\n",
        row_line(0, Some(1000)),
        row_line(1, Some(234)),
        row_line(2, None)
    );
    std::fs::write(&script, body).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let before = references_reported();
    let total_before = references_simulated();
    let mut ray = Ray {
        python: script.display().to_string(),
        address: None,
    };
    let points: Vec<Point> = Vec::new();
    let mut rows = Vec::new();
    ray.run(&points, &mut |r| rows.push(r))
        .expect("the stand-in driver succeeds");
    assert_eq!(rows.len(), 3);
    // 1,000 + 234 + 0 (the failed point has no `references`): by hand, 1,234. Nothing
    // was simulated in this process, and this is the only test of the binary that runs
    // an executor, so both counts move by exactly that.
    assert_eq!(references_reported() - before, 1234);
    assert_eq!(references_simulated() - total_before, 1234);
    let _ = std::fs::remove_dir_all(&dir);
}
