//! The sweep spec (docs/sweep.md): a `[sweep]` table of settings every point shares and
//! a `[params]` table of parameters, each a list of values, crossed as a Cartesian
//! product or zipped into points.

use crate::point::{Point, Source};
use crate::SweepError;
use std::path::{Path, PathBuf};

/// Keys of `[sweep]`.
const SWEEP_KEYS: &[&str] = &[
    "mode",
    "machine",
    "config",
    "set",
    "trace",
    "workload",
    "format",
    "prefetches",
    "cores",
    "interleave",
    "output",
];

/// Parameter names that are not config keys.
const SPECIAL: &[&str] = &["machine", "config", "trace", "workload"];

/// The keys of `[params]` in the order the text has them (serde visits a TOML table's
/// keys in document order).
#[derive(serde::Deserialize)]
struct InOrder {
    #[serde(default)]
    params: Option<Keys>,
}

struct Keys(Vec<String>);

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    m.next_value::<serde::de::IgnoredAny>()?;
                    keys.push(k);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(V)
    }
}

/// How parameter lists combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every combination (the product of the list lengths).
    Product,
    /// The i-th values of every list together (all lists of one length).
    Zip,
}

/// A parsed sweep spec.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Where the spec came from (messages).
    pub origin: String,
    /// Directory relative paths are taken from.
    pub dir: PathBuf,
    /// Product or zip.
    pub mode: Mode,
    /// `[sweep]` values shared by every point (the special keys and `set`, `format`…).
    base: toml::Table,
    /// `[params]`, in spec order: (name, values).
    pub params: Vec<(String, Vec<toml::Value>)>,
    /// `[sweep] output`, resolved against `dir`.
    pub output: Option<PathBuf>,
}

impl Spec {
    /// Reads a spec file.
    pub fn read(path: &Path) -> Result<Spec, SweepError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SweepError::Spec(format!("cannot read sweep spec {}: {e}", path.display())))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Spec::parse(&text, &path.display().to_string(), &dir)
    }

    /// Parses spec text; `origin` names it in messages, relative paths are taken from `dir`.
    pub fn parse(text: &str, origin: &str, dir: &Path) -> Result<Spec, SweepError> {
        let err = |e: toml::de::Error| SweepError::Spec(format!("{origin}: {}", e.to_string().trim_end()));
        let table: toml::Table = toml::from_str(text).map_err(err)?;
        let mut spec = Spec::from_table(table, origin, dir)?;
        // A `toml::Table` sorts its keys; the parameters keep the order they are written in.
        let order: InOrder = toml::from_str(text).map_err(err)?;
        if let Some(keys) = order.params {
            spec.params
                .sort_by_key(|(k, _)| keys.0.iter().position(|x| x == k).unwrap_or(usize::MAX));
        }
        Ok(spec)
    }

    /// Builds a spec from a parsed TOML table.
    pub fn from_table(mut table: toml::Table, origin: &str, dir: &Path) -> Result<Spec, SweepError> {
        let bad = |msg: String| SweepError::Spec(format!("{origin}: {msg}"));
        let base = match table.remove("sweep") {
            Some(toml::Value::Table(t)) => t,
            Some(_) => return Err(bad("`sweep` must be a table".into())),
            None => toml::Table::new(),
        };
        let params_table = match table.remove("params") {
            Some(toml::Value::Table(t)) => t,
            Some(_) => return Err(bad("`params` must be a table".into())),
            None => toml::Table::new(),
        };
        if let Some(k) = table.keys().next() {
            return Err(bad(format!(
                "unknown key '{k}' (a sweep spec has the tables [sweep] and [params]; docs/sweep.md)"
            )));
        }
        for k in base.keys() {
            if !SWEEP_KEYS.contains(&k.as_str()) {
                return Err(bad(format!(
                    "unknown key 'sweep.{k}' (known: {}; docs/sweep.md)",
                    SWEEP_KEYS.join(", ")
                )));
            }
        }
        let mode = match base.get("mode").map(|v| v.as_str()) {
            None | Some(Some("product")) => Mode::Product,
            Some(Some("zip")) => Mode::Zip,
            Some(_) => return Err(bad("sweep.mode must be \"product\" or \"zip\"".into())),
        };
        let mut params = Vec::new();
        for (k, v) in params_table {
            let values = match v {
                toml::Value::Array(a) => a,
                _ => return Err(bad(format!("params.{k} must be a list of values, e.g. [512, 1024]"))),
            };
            if values.is_empty() {
                return Err(bad(format!(
                    "params.{k} is an empty list: the sweep would have no point"
                )));
            }
            if SPECIAL.contains(&k.as_str()) && values.iter().any(|v| !v.is_str()) {
                return Err(bad(format!("params.{k} must be a list of strings")));
            }
            if base.contains_key(&k) && SPECIAL.contains(&k.as_str()) {
                return Err(bad(format!("'{k}' is both in [sweep] and in [params]: keep one")));
            }
            params.push((k, values));
        }
        if mode == Mode::Zip {
            if let Some((k0, v0)) = params.first() {
                if let Some((k, v)) = params.iter().find(|(_, v)| v.len() != v0.len()) {
                    return Err(bad(format!(
                        "sweep.mode = \"zip\" needs lists of one length: params.{k0} has {}, params.{k} has {}",
                        v0.len(),
                        v.len()
                    )));
                }
            }
        }
        let has = |k: &str| base.contains_key(k) || params.iter().any(|(p, _)| p == k);
        match (has("trace"), has("workload")) {
            (false, false) => {
                return Err(bad(
                    "no input: give sweep.trace, sweep.workload or a list of either in [params]".into(),
                ))
            }
            (true, true) => return Err(bad("give traces or workloads, not both".into())),
            _ => {}
        }
        let output = match base.get("output") {
            Some(toml::Value::String(s)) => Some(dir.join(s)),
            Some(_) => return Err(bad("sweep.output must be a file name".into())),
            None => None,
        };
        Ok(Spec {
            origin: origin.to_string(),
            dir: dir.to_path_buf(),
            mode,
            base,
            params,
            output,
        })
    }

    /// The number of points.
    pub fn len(&self) -> usize {
        match self.mode {
            Mode::Product => self.params.iter().map(|(_, v)| v.len()).product(),
            Mode::Zip => self.params.first().map_or(1, |(_, v)| v.len()),
        }
    }

    /// True when the spec has no point (never: empty lists are refused).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The points, in order (the last parameter varies fastest in a product). Traces are
    /// checked to exist; nothing is hashed or resolved yet ([`crate::identify`]).
    pub fn points(&self) -> Result<Vec<Point>, SweepError> {
        self.points_in(0..self.len())
    }

    /// The points whose indices are in `range` (clipped to the spec), as [`Spec::points`]
    /// makes them: what a sweep planned batch by batch expands at a time.
    pub fn points_in(&self, range: std::ops::Range<usize>) -> Result<Vec<Point>, SweepError> {
        let bad = |msg: String| SweepError::Spec(format!("{}: {msg}", self.origin));
        let s = |k: &str| -> Result<Option<String>, SweepError> {
            match self.base.get(k) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(format!("sweep.{k} must be a string"))),
            }
        };
        let sets: Vec<String> = match self.base.get("set") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| bad("sweep.set must be a list of \"key=value\" strings".into()))?,
            Some(_) => return Err(bad("sweep.set must be a list of \"key=value\" strings".into())),
        };
        let read = crate::point::ReadSpec {
            format: s("format")?.unwrap_or_else(|| "auto".into()),
            prefetches: match self.base.get("prefetches") {
                None => false,
                Some(toml::Value::Boolean(b)) => *b,
                Some(_) => return Err(bad("sweep.prefetches must be true or false".into())),
            },
            cores: s("cores")?.unwrap_or_else(|| "cpu".into()),
            interleave: s("interleave")?.unwrap_or_else(|| "timestamp".into()),
        };
        let range = range.start.min(self.len())..range.end.min(self.len());
        let mut points = Vec::with_capacity(range.len());
        for index in range {
            // The value index of each parameter for point `index`.
            let mut rest = index;
            let mut pick = vec![0; self.params.len()];
            for (i, (_, v)) in self.params.iter().enumerate().rev() {
                pick[i] = match self.mode {
                    Mode::Zip => index,
                    Mode::Product => {
                        let j = rest % v.len();
                        rest /= v.len();
                        j
                    }
                };
            }
            let mut p = Point {
                index,
                id: String::new(),
                config_hash: String::new(),
                params: Vec::new(),
                machine: s("machine")?.map(|m| self.machine(&m)),
                config: s("config")?.map(|c| self.dir.join(c)),
                config_toml: None,
                sets: sets.clone(),
                source: match (s("trace")?, s("workload")?) {
                    (Some(t), _) => Source::Trace(self.dir.join(t)),
                    (_, Some(w)) => Source::Workload(w),
                    _ => Source::Workload(String::new()),
                },
                read: read.clone(),
            };
            for ((k, values), &j) in self.params.iter().zip(&pick) {
                let v = &values[j];
                let text = v.as_str().map(str::to_string);
                match (k.as_str(), text) {
                    ("machine", Some(m)) => p.machine = Some(self.machine(&m)),
                    ("config", Some(c)) => p.config = Some(self.dir.join(c)),
                    ("trace", Some(t)) => p.source = Source::Trace(self.dir.join(t)),
                    ("workload", Some(w)) => p.source = Source::Workload(w),
                    _ => p.sets.push(format!("{k}={v}")),
                }
                p.params.push((k.clone(), crate::table::json_of(v)));
            }
            if let Source::Trace(t) = &p.source {
                if !t.exists() {
                    return Err(bad(format!(
                        "trace {} does not exist (a relative path is taken from the spec's directory)",
                        t.display()
                    )));
                }
            }
            if let Some(c) = &p.config {
                if !c.is_file() {
                    return Err(bad(format!("config {} does not exist", c.display())));
                }
            }
            points.push(p);
        }
        Ok(points)
    }

    /// Checks, without expanding the points, that every trace and config file the spec
    /// names (in `[sweep]` or as a parameter's value) exists: a sweep planned batch by
    /// batch meets a missing file before its first point, not hours later.
    pub fn check_inputs(&self) -> Result<(), SweepError> {
        // The first point checks what `[sweep]` names and each parameter's first value.
        self.points_in(0..1)?;
        let bad = |msg: String| SweepError::Spec(format!("{}: {msg}", self.origin));
        for (k, values) in &self.params {
            for v in values.iter().filter_map(|v| v.as_str()) {
                let path = self.dir.join(v);
                match k.as_str() {
                    "trace" if !path.exists() => {
                        return Err(bad(format!(
                            "trace {} does not exist (a relative path is taken from the spec's directory)",
                            path.display()
                        )))
                    }
                    "config" if !path.is_file() => {
                        return Err(bad(format!("config {} does not exist", path.display())))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A machine name from the catalog stays a name; anything else is a file, relative
    /// to the spec's directory.
    fn machine(&self, m: &str) -> String {
        if mmulab_sim::catalog::get(m).is_some() {
            m.to_string()
        } else {
            self.dir.join(m).display().to_string()
        }
    }
}
