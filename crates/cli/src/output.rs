//! Output files that never destroy what mmulab did not create. Every command that writes
//! a file (convert, record -o, --timeseries, --plot, --emit-machine) goes through
//! [`OutputFile`]:
//!
//! - a regular file (new or existing) is written to a temporary file beside it, named
//!   `.NAME.mmulab-PID.tmp[.EXT]`, and renamed over NAME only when the output is complete
//!   ([`OutputFile::commit`]); on an error or an interruption the temporary file — and only
//!   it — is removed, so NAME keeps its old content or stays absent;
//! - `-` (stdout) and existing special files (character devices such as `/dev/stdout` or
//!   `/dev/null`, FIFOs, sockets) are written in place and never removed;
//! - a symbolic link to a file is followed: the file it points to is replaced, the link
//!   stays.

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// One output file of a command (see the module comment).
#[derive(Debug)]
pub struct OutputFile {
    /// The name the user gave (for messages).
    shown: PathBuf,
    /// Where the output ends up: the user's path, or the file a symbolic link names.
    target: PathBuf,
    /// The temporary file beside `target` (created by us, removed unless committed);
    /// `None` when writing in place.
    temp: Option<PathBuf>,
    /// Writing to this process's stdout (`-`).
    stdout: bool,
}

impl OutputFile {
    /// Plans the output `path` and, for a regular file, creates its (empty) temporary
    /// file. Errors name the path: a directory, a read-only file, a directory where no
    /// temporary file can be made.
    pub fn new(path: &Path) -> Result<OutputFile> {
        let shown = path.to_path_buf();
        if path.as_os_str() == "-" {
            return Ok(OutputFile {
                target: PathBuf::from("/dev/stdout"),
                shown,
                temp: None,
                stdout: true,
            });
        }
        // metadata() follows symbolic links: /dev/stdout is whatever fd 1 is.
        let target = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => bail!("{} is a directory; give a file name to write", path.display()),
            Ok(m) if !m.is_file() => {
                let t = m.file_type();
                if t.is_char_device() || t.is_fifo() || t.is_socket() || t.is_block_device() {
                    // Special files are written in place and never removed.
                    return Ok(OutputFile {
                        shown,
                        target: path.to_path_buf(),
                        temp: None,
                        stdout: false,
                    });
                }
                bail!("{}: not a regular file; give a file name to write", path.display())
            }
            Ok(m) if m.permissions().readonly() => {
                bail!(
                    "{} is read-only; make it writable or choose another name",
                    path.display()
                )
            }
            // A link to a file: replace the file, keep the link.
            Ok(_) => std::fs::canonicalize(path).with_context(|| format!("cannot resolve {}", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if std::fs::symlink_metadata(path).is_ok() {
                    bail!("{}: a symbolic link to nothing; give the file to write", path.display());
                }
                path.to_path_buf()
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot write {}", path.display()))),
        };
        let temp =
            create_temp(&target).with_context(|| match target.parent().filter(|d| !d.as_os_str().is_empty()) {
                Some(d) if !d.is_dir() => format!(
                    "cannot write {}: directory {} does not exist",
                    path.display(),
                    d.display()
                ),
                _ => format!(
                    "cannot write {}: no temporary file can be created beside it",
                    path.display()
                ),
            })?;
        Ok(OutputFile {
            shown,
            target,
            temp: Some(temp),
            stdout: false,
        })
    }

    /// The path to write to: the temporary file, or the special file itself. For
    /// libraries that take a path (plots: it keeps the target's extension).
    pub fn path(&self) -> &Path {
        self.temp.as_deref().unwrap_or(&self.target)
    }

    /// True when the output goes straight to stdout or a special file (nothing to rename,
    /// and what was written stays written).
    pub fn in_place(&self) -> bool {
        self.temp.is_none()
    }

    /// Opens [`Self::path`] for writing (truncating the temporary file; a special file is
    /// opened as it is, stdout is duplicated).
    pub fn open(&self) -> Result<File> {
        if self.stdout {
            let fd = std::io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .context("cannot duplicate stdout")?;
            return Ok(File::from(fd));
        }
        let f = match &self.temp {
            Some(t) => File::create(t),
            None => File::options().write(true).open(&self.target),
        };
        f.with_context(|| format!("cannot open {} for writing", self.path().display()))
    }

    /// [`Self::open`], with every write error naming the target (`/dev/full: No space
    /// left on device`), for writers handed to a library that reports errors without
    /// the path (the simulator's time series and memory request stream).
    pub fn open_named(&self) -> Result<Named> {
        Ok(Named {
            name: self.target.display().to_string(),
            file: self.open()?,
        })
    }

    /// Makes the output visible under its name: renames the temporary file over the
    /// target, keeping the permissions of the file it replaces. Nothing to do in place.
    pub fn commit(mut self) -> Result<()> {
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        if let Ok(old) = std::fs::metadata(&self.target) {
            let _ = std::fs::set_permissions(&temp, old.permissions());
        }
        std::fs::rename(&temp, &self.target).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            anyhow::Error::new(e).context(format!("cannot move the finished output to {}", self.shown.display()))
        })
    }
}

impl Drop for OutputFile {
    /// Not committed: removes the temporary file — the only file this type ever removes.
    fn drop(&mut self) {
        if let Some(t) = self.temp.take() {
            let _ = std::fs::remove_file(t);
        }
    }
}

pub use mmulab_trace::format::Counted;

/// Creates a new, empty temporary file beside `target`; fails rather than reuse a name.
fn create_temp(target: &Path) -> std::io::Result<PathBuf> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = target
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let pid = std::process::id();
    let mut last = None;
    for n in 0..100 {
        let temp = dir.join(format!(".{name}.mmulab-{pid}-{n}.tmp{ext}"));
        match File::options().write(true).create_new(true).open(&temp) {
            Ok(_) => return Ok(temp),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

/// Writes `bytes` to `path` through an [`OutputFile`] (all or nothing for a regular file).
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let out = OutputFile::new(path)?;
    let mut f = out.open()?;
    f.write_all(bytes)
        .and_then(|_| f.flush())
        .with_context(|| format!("writing {}", path.display()))?;
    drop(f);
    out.commit()
}

/// Writes to `path` through `f` and a buffer, as it is formatted, through an
/// [`OutputFile`] (all or nothing for a regular file).
pub fn write_stream(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let out = OutputFile::new(path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, out.open()?);
    f(&mut w)
        .and_then(|_| w.flush())
        .with_context(|| format!("writing {}", path.display()))?;
    drop(w);
    out.commit()
}

/// Runs `draw` on the path of an [`OutputFile`] for `path` (a library that writes a
/// plot to a path it is given) and commits the result only if `draw` succeeded.
pub fn write_with<E>(path: &Path, draw: impl FnOnce(&Path) -> Result<(), E>) -> Result<()>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let out = OutputFile::new(path)?;
    draw(out.path()).with_context(|| format!("writing {}", path.display()))?;
    out.commit()
}

/// A file whose write errors name the output ([`OutputFile::open_named`]).
pub struct Named {
    name: String,
    file: File,
}

impl Named {
    fn named(&self, e: std::io::Error) -> std::io::Error {
        std::io::Error::new(e.kind(), format!("{}: {e}", self.name))
    }
}

impl Write for Named {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf).map_err(|e| self.named(e))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush().map_err(|e| self.named(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mmulab-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn an_uncommitted_output_leaves_the_old_file_and_no_temporary() {
        let d = dir("keep");
        let p = d.join("out.txt");
        std::fs::write(&p, "old").unwrap();
        let out = OutputFile::new(&p).unwrap();
        out.open().unwrap().write_all(b"new, half").unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "temporary file left behind");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_committed_output_replaces_the_file_through_a_symlink() {
        let d = dir("commit");
        let p = d.join("real.txt");
        std::fs::write(&p, "old").unwrap();
        let link = d.join("link.txt");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        write(&link, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn special_files_are_written_in_place() {
        let out = OutputFile::new(Path::new("/dev/null")).unwrap();
        assert!(out.in_place());
        out.open().unwrap().write_all(b"x").unwrap();
        drop(out);
        assert!(Path::new("/dev/null").exists());
        assert!(OutputFile::new(Path::new("/")).is_err());
    }
}
