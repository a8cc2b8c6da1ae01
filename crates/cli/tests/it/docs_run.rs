//! Documentation that runs (issue 18, item 7): every `mmulab …` command shown in a fenced
//! block of README.md and docs/*.md is run against the built binary, and fails the test on
//! a non-zero exit or when a figure the text states no longer appears in its output.
//!
//! What is a command: in a fenced block, a logical line (joined over trailing `\`) that
//! starts with `mmulab ` or `$ mmulab ` (in a block with `$ ` prompts only prompt lines are
//! commands, the rest is shown output), or `cargo run … -p mmulab-cli … -- ARGS` (run as
//! `mmulab ARGS`). Any other line of a shell block (```` ```sh ````, bash, shell, console)
//! that invokes the binary (`valgrind … target/release/mmulab sim …`) cannot be run here
//! and must be skipped by a marker.
//!
//! Markers, HTML comments right after the closing fence (blank lines allowed between):
//! * `<!-- doc-test: skip (REASON) -->`: the block is not run; the harness prints the
//!   reason. The only way to leave a block out (real hardware, hugetlbfs, valgrind, perf).
//! * `<!-- doc-test: expect "TEXT" -->`: the last command's output (stdout, then stderr)
//!   contains TEXT (`\"` for a quote), whitespace runs compared as one space;
//!   `expect 2 "TEXT"` checks the block's second command. Figures the prose states get such
//!   a marker.
//! * `<!-- doc-test: output -->` on a block with `$ ` prompts: every line shown after a
//!   command must appear in that command's output (whitespace runs compared as one space;
//!   `...` or `…` in a shown line elides text: each piece between them must appear).
//!
//! Unknown markers are errors, so a typo cannot silently switch a check off. Inline code in
//! prose is not run: a command whose output or figures the text quotes belongs in a fenced
//! block with a marker.
//!
//! How it runs: each block in its own scratch copy of the repository's documentation
//! inputs (README.md, docs/, machines/, experiments/, tests/data/), so a command that
//! writes a file (`--plot docs/x.png`) cannot overwrite a committed one; each command via
//! `sh -c` (quotes, pipes and environment assignments as a reader would type them) with the
//! built `mmulab` first on PATH; blocks on two threads; each command under a 120 s timeout.
//!
//! Reference cap: the harness, not the binary, bounds long runs. A `--workload SPEC` whose
//! total reference count (computed by `mmulab_trace::workload::parse`) exceeds
//! `MMULAB_DOCTEST_MAX_REFS` (default 160,000,000: a 1 GiB GUPS table's initialisation, 134 M stores, plus 20 M updates) is rewritten with a smaller `refs=` (for
//! `build`, per-process refs; for `gups`, also `init=off` if its table's initialisation
//! alone is over the cap), and the harness says so. Why in the harness: a cap inside
//! the binary would be a hidden switch that silently shortens users' runs. A capped
//! command with an `expect` marker is a failure (its figure needs the full run: the doc
//! should show a shorter run). Today no documented command needs the cap.
//!
//! Run: `cargo test --release -p mmulab-cli --test it docs_run:: -- --nocapture` prints every
//! command with its time, what was skipped and why, and what was capped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_MAX_REFS: u64 = 160_000_000;
const COPIED: [&str; 5] = ["README.md", "docs", "machines", "experiments", "tests/data"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One command of a block: where it is, the shell text to run, the text as documented.
#[derive(Clone, Debug)]
struct Cmd {
    line: usize,
    shown: String,
    run: String,
    /// The output lines shown after it (prompt blocks): (line, text).
    output: Vec<(usize, String)>,
}

/// A fenced block with its commands and markers.
#[derive(Clone, Debug, Default)]
struct Block {
    file: String,
    line: usize,
    cmds: Vec<Cmd>,
    /// Lines that invoke mmulab but cannot be run as a command.
    unrunnable: Vec<(usize, String)>,
    skip: Option<String>,
    /// (1-based command index, or None for the last; expected text).
    expects: Vec<(Option<usize>, String)>,
    /// Whether the shown output of each command is checked (`doc-test: output`).
    check_output: bool,
    /// Marker errors (unknown marker, skip without reason, …).
    errors: Vec<String>,
}

/// Parses one `<!-- doc-test: … -->` marker into `b`.
fn marker(b: &mut Block, body: &str, line: usize) {
    let at = format!("{}:{line}", b.file);
    let body = body.trim();
    if let Some(rest) = body.strip_prefix("skip") {
        let reason = rest.trim().trim_start_matches('(').trim_end_matches(')').trim();
        if reason.is_empty() {
            b.errors
                .push(format!("{at}: `doc-test: skip` needs a reason: skip (why)"));
        }
        b.skip = Some(reason.to_string());
    } else if let Some(rest) = body.strip_prefix("expect") {
        let rest = rest.trim();
        let (index, quoted) = match rest.split_once(' ') {
            Some((n, q)) if n.parse::<usize>().is_ok() => (n.parse::<usize>().ok(), q.trim()),
            _ => (None, rest),
        };
        match quoted.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
            Some(text) if !text.trim().is_empty() => b.expects.push((index, text.replace("\\\"", "\""))),
            _ => b
                .errors
                .push(format!("{at}: `doc-test: expect` takes [N] \"TEXT\", not '{rest}'")),
        }
    } else if body == "output" {
        b.check_output = true;
    } else {
        b.errors.push(format!(
            "{at}: unknown marker 'doc-test: {body}' (known: skip (REASON), expect [N] \"TEXT\", output)"
        ));
    }
}

/// Whether a shell line invokes the mmulab binary somewhere (as a word `mmulab` or a path
/// ending in `/mmulab`).
fn invokes_mmulab(line: &str) -> bool {
    line.split_whitespace().any(|w| w == "mmulab" || w.ends_with("/mmulab"))
}

/// The mmulab command a logical line runs, if it is one.
fn command_of(line: &str) -> Option<String> {
    if line.starts_with("mmulab ") || line == "mmulab" {
        return Some(line.to_string());
    }
    let rest = line.strip_prefix("cargo run ")?;
    let (cargo_args, args) = rest.split_once(" -- ").unwrap_or((rest, ""));
    let words: Vec<&str> = cargo_args.split_whitespace().collect();
    let ours = words
        .windows(2)
        .any(|w| matches!(w, ["-p" | "--package", "mmulab-cli"] | ["--bin", "mmulab"]));
    ours.then(|| format!("mmulab {args}").trim_end().to_string())
}

/// Finds the fenced blocks of a markdown text and their commands and markers.
fn blocks(file: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        if !(fence.starts_with("```") || fence.starts_with("~~~")) {
            i += 1;
            continue;
        }
        let mark = &fence[..3];
        let shell = matches!(fence[3..].trim(), "sh" | "bash" | "shell" | "console" | "zsh");
        let mut b = Block {
            file: file.to_string(),
            line: i + 1,
            ..Default::default()
        };
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && !lines[i].trim_start().starts_with(mark) {
            body.push((i + 1, lines[i]));
            i += 1;
        }
        i += 1; // the closing fence
                // Logical lines: join trailing backslashes.
        let mut logical: Vec<(usize, String)> = Vec::new();
        let mut pending: Option<(usize, String)> = None;
        for (n, l) in body {
            let (start, mut acc) = pending.take().unwrap_or((n, String::new()));
            let t = l.trim_end();
            match t.strip_suffix('\\') {
                Some(head) => {
                    acc.push_str(head.trim_start());
                    acc.push(' ');
                    pending = Some((start, acc));
                }
                None => {
                    acc.push_str(t.trim_start());
                    logical.push((start, acc));
                }
            }
        }
        logical.extend(pending);
        let prompts = logical.iter().any(|(_, l)| l.starts_with("$ "));
        for (n, l) in logical {
            let l = l.split_whitespace().collect::<Vec<_>>().join(" ");
            let l = if prompts {
                match l.strip_prefix("$ ") {
                    Some(c) => c.to_string(),
                    None => {
                        if let Some(c) = b.cmds.last_mut() {
                            c.output.push((n, l));
                        }
                        continue;
                    }
                }
            } else {
                l
            };
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            match command_of(&l) {
                Some(run) => b.cmds.push(Cmd {
                    line: n,
                    shown: l.clone(),
                    run,
                    output: Vec::new(),
                }),
                None if shell && invokes_mmulab(&l) => b.unrunnable.push((n, l)),
                None => {}
            }
        }
        // Markers after the block.
        while i < lines.len() {
            let t = lines[i].trim();
            if t.is_empty() {
                i += 1;
                continue;
            }
            match t
                .strip_prefix("<!--")
                .and_then(|r| r.strip_suffix("-->"))
                .map(str::trim)
            {
                Some(c) if c.starts_with("doc-test:") => {
                    marker(&mut b, &c["doc-test:".len()..], i + 1);
                    i += 1;
                }
                _ => break,
            }
        }
        for (n, _) in &b.expects {
            if n.is_some_and(|n| n == 0 || n > b.cmds.len()) {
                b.errors.push(format!(
                    "{}:{}: expect {} but the block has {} commands",
                    file,
                    b.line,
                    n.unwrap(),
                    b.cmds.len()
                ));
            }
        }
        if b.cmds.is_empty() && b.unrunnable.is_empty() && (b.skip.is_some() || !b.expects.is_empty()) {
            b.errors.push(format!(
                "{file}:{}: a doc-test marker on a block without mmulab commands",
                b.line
            ));
        }
        if !b.cmds.is_empty() || !b.unrunnable.is_empty() || !b.errors.is_empty() {
            out.push(b);
        }
    }
    out
}

/// Rewrites `--workload SPEC` so the run has at most `max` references; returns the new
/// command and a note, or an error when the spec cannot be capped.
fn cap_refs(cmd: &str, max: u64) -> Result<(String, Option<String>), String> {
    let words: Vec<&str> = cmd.split(' ').collect();
    let mut out = words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let mut note = None;
    for (k, w) in words.iter().enumerate() {
        let (idx, prefix, spec) = match *w {
            "--workload" | "-w" if k + 1 < words.len() => (k + 1, "", words[k + 1]),
            _ => match w.strip_prefix("--workload=") {
                Some(s) => (k, "--workload=", s),
                None => continue,
            },
        };
        let quote = spec.starts_with('\'') || spec.starts_with('"');
        let bare = spec.trim_matches(|c| c == '\'' || c == '"');
        let Some(total) = total_refs(bare) else { continue };
        if total <= max {
            continue;
        }
        let capped = capped_spec(bare, max)?;
        note = Some(format!("{bare} asks {total} references: run as {capped}"));
        out[idx] = if quote {
            format!("{prefix}'{capped}'")
        } else {
            format!("{prefix}{capped}")
        };
    }
    Ok((out.join(" "), note))
}

/// Total references of a workload spec, as the generator will deliver them.
fn total_refs(spec: &str) -> Option<u64> {
    mmulab_trace::workload::parse(spec)
        .ok()?
        .progress()
        .map(|(_, total)| total)
}

/// `spec` with `key=value` (replacing the key if given).
fn with_key(spec: &str, key: &str, value: &str) -> String {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let eq = format!("{key}=");
    let mut kv: Vec<String> = rest
        .split(',')
        .filter(|p| !p.trim().is_empty() && !p.trim().starts_with(&eq))
        .map(str::to_string)
        .collect();
    kv.push(format!("{key}={value}"));
    format!("{name}:{}", kv.join(","))
}

fn with_refs(spec: &str, refs: u64) -> String {
    with_key(spec, "refs", &refs.to_string())
}

fn capped_spec(spec: &str, max: u64) -> Result<String, String> {
    let first = with_refs(spec, max);
    let total = total_refs(&first).ok_or_else(|| format!("{first} does not parse"))?;
    if total <= max {
        return Ok(first);
    }
    // `gups`: its table's initialisation (on by default) counts too; a capped run
    // leaves it out.
    if spec.starts_with("gups:") {
        let g = with_key(&first, "init", "off");
        if total_refs(&g).is_some_and(|t| t <= max) {
            return Ok(g);
        }
    }
    // `build`: refs counts per process; scale it by the processes.
    let per = (max as u128 * max as u128 / total as u128) as u64;
    let second = with_refs(spec, per.max(1));
    match total_refs(&second) {
        Some(t) if t <= max => Ok(second),
        _ => Err(format!("cannot cap {spec} to {max} references by refs=")),
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    if from.is_dir() {
        std::fs::create_dir_all(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
        Ok(())
    } else {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(from, to).map(|_| ())
    }
}

/// A scratch copy of the documentation's inputs; removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("mmulab-docs-run-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for p in COPIED {
            copy_tree(&root().join(p), &dir.join(p)).unwrap_or_else(|e| panic!("copy {p}: {e}"));
        }
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs one block; returns report lines and failures.
fn run_block(b: &Block, tag: &str, max_refs: u64) -> (Vec<String>, Vec<String>) {
    let mut log = Vec::new();
    let mut fails = b.errors.clone();
    if let Some(reason) = &b.skip {
        for c in &b.cmds {
            log.push(format!("SKIP  {}:{}  {}  ({reason})", b.file, c.line, c.shown));
        }
        for (n, l) in &b.unrunnable {
            log.push(format!("SKIP  {}:{n}  {l}  ({reason})", b.file));
        }
        return (log, fails);
    }
    for (n, l) in &b.unrunnable {
        fails.push(format!(
            "{}:{n}: `{l}` invokes mmulab but is not an `mmulab …` command the harness can run; \
             add <!-- doc-test: skip (reason) --> after its block",
            b.file
        ));
    }
    if b.cmds.is_empty() {
        return (log, fails);
    }
    let scratch = Scratch::new(tag);
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_mmulab")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut outputs = Vec::new();
    for (k, c) in b.cmds.iter().enumerate() {
        let at = format!("{}:{}", b.file, c.line);
        let (run, note) = match cap_refs(&c.run, max_refs) {
            Ok(r) => r,
            Err(e) => {
                fails.push(format!("{at}: {e}"));
                outputs.push(String::new());
                continue;
            }
        };
        if let Some(note) = &note {
            log.push(format!("CAP   {at}  {note}"));
            if b.expects.iter().any(|(n, _)| n.unwrap_or(b.cmds.len()) == k + 1) {
                fails.push(format!(
                    "{at}: a documented figure needs this run in full, but it asks more than \
                     {max_refs} references (MMULAB_DOCTEST_MAX_REFS): show a shorter run"
                ));
            }
        }
        let out_path = scratch.0.join(format!(".doc-test-out-{k}"));
        let err_path = scratch.0.join(format!(".doc-test-err-{k}"));
        let t = Instant::now();
        let child = Command::new("sh")
            .arg("-c")
            .arg(&run)
            .current_dir(&scratch.0)
            .env("PATH", &path)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn();
        let status = child.map_err(|e| e.to_string()).and_then(|mut ch| loop {
            match ch.try_wait() {
                Ok(Some(s)) => break Ok(s),
                Ok(None) if t.elapsed() > TIMEOUT => {
                    let _ = ch.kill();
                    let _ = ch.wait();
                    break Err(format!("timed out after {} s", TIMEOUT.as_secs()));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => break Err(e.to_string()),
            }
        });
        let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        let secs = t.elapsed().as_secs_f64();
        match status {
            Ok(s) if s.success() => log.push(format!("ok    {at}  {}  ({secs:.1} s)", c.shown)),
            Ok(s) => fails.push(format!(
                "{at}: `{}` exited with {s}; stderr:\n{}",
                c.shown,
                tail(&stderr)
            )),
            Err(e) => fails.push(format!("{at}: `{}`: {e}", c.shown)),
        }
        outputs.push(format!("{stdout}\n{stderr}"));
    }
    if b.check_output {
        if b.cmds.iter().all(|c| c.output.is_empty()) {
            fails.push(format!(
                "{}:{}: `doc-test: output` on a block that shows no output after a `$ ` command",
                b.file, b.line
            ));
        }
        for (c, out) in b.cmds.iter().zip(&outputs) {
            let out = squash(out);
            for (n, shown) in &c.output {
                let missing = shown
                    .split("...")
                    .flat_map(|p| p.split('…'))
                    .map(squash)
                    .find(|p| !p.is_empty() && !out.contains(p.as_str()));
                if let Some(p) = missing {
                    fails.push(format!(
                        "{}:{n}: the shown output of `{}` has \"{p}\", which the command no longer prints",
                        b.file, c.shown
                    ));
                }
            }
        }
    }
    for (n, text) in &b.expects {
        let k = n.unwrap_or(b.cmds.len());
        let Some(out) = outputs.get(k - 1) else { continue };
        if !squash(out).contains(&squash(text)) {
            fails.push(format!(
                "{}:{}: the text states \"{text}\" for `{}`, but its output does not contain it:\n{}",
                b.file,
                b.line,
                b.cmds[k - 1].shown,
                tail(out)
            ));
        }
    }
    (log, fails)
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(25)..].join("\n")
}

/// A block's index, report lines and failures.
type BlockOutcome = (usize, Vec<String>, Vec<String>);

/// Runs blocks on two threads; returns (report, failures) in document order.
fn run_all(blocks: &[Block], max_refs: u64) -> (Vec<String>, Vec<String>) {
    let next = Mutex::new(0usize);
    let results: Mutex<Vec<BlockOutcome>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some(b) = blocks.get(i) else { break };
                let (log, fails) = run_block(b, &i.to_string(), max_refs);
                results.lock().unwrap().push((i, log, fails));
            });
        }
    });
    let mut r = results.into_inner().unwrap();
    r.sort_by_key(|x| x.0);
    let log = r.iter().flat_map(|x| x.1.clone()).collect();
    let fails = r.into_iter().flat_map(|x| x.2).collect();
    (log, fails)
}

fn max_refs() -> u64 {
    std::env::var("MMULAB_DOCTEST_MAX_REFS")
        .ok()
        .map(|v| {
            v.parse()
                .expect("MMULAB_DOCTEST_MAX_REFS must be a number of references")
        })
        .unwrap_or(DEFAULT_MAX_REFS)
}

#[test]
fn documented_commands_run_and_print_what_the_text_says() {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut all = Vec::new();
    for f in &files {
        let name = f.strip_prefix(root()).unwrap_or(f).display().to_string();
        all.extend(blocks(&name, &std::fs::read_to_string(f).unwrap()));
    }
    let commands: usize = all.iter().map(|b| b.cmds.len()).sum();
    assert!(
        commands >= 8,
        "only {commands} documented commands found: is the extraction broken?"
    );
    let t = Instant::now();
    let (log, fails) = run_all(&all, max_refs());
    println!("{}", log.join("\n"));
    let skipped = log.iter().filter(|l| l.starts_with("SKIP")).count();
    println!(
        "docs_run: {commands} mmulab commands in {} blocks, {skipped} command lines skipped by marker, {} failures, {:.1} s",
        all.len(),
        fails.len(),
        t.elapsed().as_secs_f64()
    );
    assert!(
        fails.is_empty(),
        "documentation that does not run:\n\n{}",
        fails.join("\n\n")
    );
}

/// The harness itself: it must fail on a broken command, a figure that is not printed, an
/// unknown or incomplete marker and an unmarked unrunnable invocation, and pass a good block.
#[test]
fn harness_catches_broken_documentation() {
    let md = r#"
```sh
mmulab machines
```
<!-- doc-test: expect "skylake x86_64" -->

```sh
mmulab sim --workload nosuch:pages=1
```

```
$ mmulab machines
name arch
cortex-a5 armv7 10 10 128
```
<!-- doc-test: expect "cortex-a5 armv7 10 10 999" -->

```sh
cargo run --release -p mmulab-cli -- sim --workload \
   seq:size=64K
mmulab machines
```
<!-- doc-test: expect 1 "references 1,024" -->
<!-- doc-test: expect 2 "cortex-a9" -->

```sh
valgrind target/release/mmulab sim --workload seq:size=1M
```

```sh
valgrind target/release/mmulab sim --workload seq:size=1M
```
<!-- doc-test: skip (needs valgrind) -->

```sh
mmulab machines
```
<!-- doc-test: skip -->
<!-- doc-test: expcet "x" -->

```
$ mmulab machines
name         arch ... description
cortex-a9    armv7     32   32     128 + 4  ...
```
<!-- doc-test: output -->

```
$ mmulab machines
cortex-a9    armv7     32   32     129  ...
```
<!-- doc-test: output -->
"#;
    let bs = blocks("t.md", md);
    assert_eq!(bs.len(), 9, "{bs:#?}");
    assert_eq!(bs[7].cmds[0].output.len(), 2);
    assert_eq!(bs[3].cmds.len(), 2);
    assert_eq!(bs[3].cmds[0].run, "mmulab sim --workload seq:size=64K");
    assert_eq!(bs[2].cmds.len(), 1, "shown output is not a command");
    let outcome: Vec<(Vec<String>, Vec<String>)> = bs
        .iter()
        .enumerate()
        .map(|(i, b)| run_block(b, &format!("self{i}"), 1_000_000))
        .collect();
    assert!(outcome[0].1.is_empty(), "{:?}", outcome[0].1);
    assert!(
        outcome[1].1.iter().any(|f| f.contains("exited with")),
        "{:?}",
        outcome[1].1
    );
    assert!(outcome[2].1.iter().any(|f| f.contains("999")), "{:?}", outcome[2].1);
    assert!(outcome[3].1.is_empty(), "{:?}", outcome[3].1);
    assert!(
        outcome[4].1.iter().any(|f| f.contains("doc-test: skip")),
        "{:?}",
        outcome[4].1
    );
    assert!(
        outcome[5].1.is_empty() && outcome[5].0[0].starts_with("SKIP"),
        "{:?}",
        outcome[5]
    );
    assert!(
        outcome[6].1.iter().any(|f| f.contains("needs a reason")),
        "{:?}",
        outcome[6].1
    );
    assert!(
        outcome[6].1.iter().any(|f| f.contains("unknown marker")),
        "{:?}",
        outcome[6].1
    );
    assert!(outcome[7].1.is_empty(), "{:?}", outcome[7].1);
    assert!(outcome[8].1.iter().any(|f| f.contains("129")), "{:?}", outcome[8].1);
}

#[test]
fn reference_cap_rewrites_long_workloads_only() {
    let (same, note) = cap_refs("mmulab sim --workload seq:size=1M", 1_000_000).unwrap();
    assert_eq!((same.as_str(), note), ("mmulab sim --workload seq:size=1M", None));
    // 2^29 updates (2^30 references) and 2^27 initialising stores; capped, the
    // initialisation is left out.
    let (capped, note) = cap_refs("mmulab sim --workload gups:table=1GiB --json", 5_000_000).unwrap();
    assert_eq!(
        capped,
        "mmulab sim --workload gups:table=1GiB,refs=5000000,init=off --json"
    );
    assert!(note.unwrap().contains("1207959552"));
    let (capped, _) = cap_refs("mmulab sim -w 'chase:pages=1000,refs=1G'", 100).unwrap();
    assert_eq!(capped, "mmulab sim -w 'chase:pages=1000,refs=100'");
    let (capped, _) = cap_refs("mmulab sim --workload=build:procs=100", 1_000_000).unwrap();
    assert!(
        total_refs(capped.strip_prefix("mmulab sim --workload=").unwrap()).unwrap() <= 1_000_000,
        "{capped}"
    );
}
