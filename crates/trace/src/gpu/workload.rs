//! Synthetic GPU workloads: BO sets and access patterns of typical GPU work, as a
//! [`GpuSource`]. Spec syntax: `NAME[:key=value,...]` (sizes take K/M/G binary units,
//! counts K/M decimal ones). Every access is one 64-byte line (the GPU's memory
//! transaction; assumed). Layouts are linear (row-major) unless said; the hardware's
//! tiled layouts (UIF, 4×4 micro-tiles) are approximated by 4×4-texel blocks of 64 bytes
//! for textures (assumed).
//!
//! * `render-target:width=1280,height=720,targets=2,frames=4` — tile-based rendering:
//!   `targets` BOs of width×height×4 bytes (colour, depth, ...); each frame stores every
//!   64×64-pixel tile row by row into each target (the tile buffer's write-back).
//! * `texture:size=1024,textures=16,mips=on,draws=2000,window=16,frames=2` — sampling:
//!   `textures` BOs of size×size texels of 4 bytes plus, with mips, the mip chain (levels
//!   halving to 1×1, one after the other in the BO); each draw picks a texture and a
//!   level (level 0 with probability 1/2, level 1 with 1/4, ...), a random centre, and
//!   reads the window×window texel footprint around it, block by block (2D locality).
//! * `vertex-buffer:buffers=8,bytes=4M,draws=400,verts=1000,stride=32,frames=2` — vertex
//!   fetch: each draw reads `verts` vertices of `stride` bytes in order from a random
//!   start in a random buffer.
//! * `small-bos:count=4000,min=4K,max=64K,accesses=100K,churn=0.05,frames=4` — many small
//!   BOs (sizes uniform in [min, max] in 4 KiB steps): each frame makes `accesses`
//!   random accesses over random BOs, then destroys `churn` of them and creates as many
//!   new ones (driver work: every create and destroy flushes the GPU MMU).
//!
//! Every workload takes `seed=N` (default 1). Nothing is held beyond one frame's events.

use super::{GpuEvent, GpuSource};
use crate::units::{parse_count, parse_size};
use crate::TraceError;
use mmulab_base::SplitMix64;
use std::collections::{BTreeMap, VecDeque};

/// Workload names, for help texts.
pub const NAMES: [&str; 4] = ["render-target", "texture", "vertex-buffer", "small-bos"];

const LINE: u64 = 64;

#[derive(Clone, Debug)]
enum Kind {
    RenderTarget {
        width: u64,
        height: u64,
        targets: u32,
    },
    Texture {
        size: u64,
        textures: u32,
        mips: bool,
        draws: u64,
        window: u64,
    },
    Vertex {
        buffers: u32,
        bytes: u64,
        draws: u64,
        verts: u64,
        stride: u64,
    },
    SmallBos {
        count: u32,
        min: u64,
        max: u64,
        accesses: u64,
        churn: f64,
    },
}

/// A synthetic GPU workload.
pub struct GpuWorkload {
    spec: String,
    kind: Kind,
    frames: u64,
    frame: u64,
    rng: SplitMix64,
    queue: VecDeque<GpuEvent>,
    emitted: u64,
    started: bool,
    /// Live BOs (id, bytes) of the small-BO workload; next free id.
    live: Vec<(u32, u64)>,
    next_id: u32,
}

struct Kv {
    spec: String,
    kv: BTreeMap<String, String>,
}

impl Kv {
    fn err(&self, m: String) -> TraceError {
        TraceError::Spec(format!("GPU workload '{}': {m}", self.spec))
    }
    fn size(&mut self, k: &str, d: u64) -> Result<u64, TraceError> {
        match self.kv.remove(k) {
            Some(v) => parse_size(&v).map_err(|e| self.err(format!("{k}: {e}"))),
            None => Ok(d),
        }
    }
    fn count(&mut self, k: &str, d: u64) -> Result<u64, TraceError> {
        let v = match self.kv.remove(k) {
            Some(v) => parse_count(&v).map_err(|e| self.err(format!("{k}: {e}")))?,
            None => d,
        };
        if v == 0 {
            return Err(self.err(format!("{k} = 0: give at least 1")));
        }
        Ok(v)
    }
    fn frac(&mut self, k: &str, d: f64) -> Result<f64, TraceError> {
        match self.kv.remove(k) {
            Some(v) => match v.parse::<f64>() {
                Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
                _ => Err(self.err(format!("{k}: '{v}' is not a fraction in 0..=1"))),
            },
            None => Ok(d),
        }
    }
    fn flag(&mut self, k: &str, d: bool) -> Result<bool, TraceError> {
        match self.kv.remove(k).as_deref() {
            None => Ok(d),
            Some("on" | "yes" | "true") => Ok(true),
            Some("off" | "no" | "false") => Ok(false),
            Some(v) => Err(self.err(format!("{k}: '{v}' is not on/off"))),
        }
    }
}

impl GpuWorkload {
    /// Parses a spec (module doc; docs/gpu.md).
    pub fn parse(spec: &str) -> Result<GpuWorkload, TraceError> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let mut a = Kv {
            spec: spec.to_string(),
            kv: BTreeMap::new(),
        };
        for part in rest.split(',').filter(|p| !p.trim().is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| a.err(format!("'{part}' is not key=value")))?;
            if a.kv.insert(k.trim().into(), v.trim().into()).is_some() {
                return Err(a.err(format!("key '{}' given twice", k.trim())));
            }
        }
        let (kind, frames) = match name.trim() {
            "render-target" => (
                Kind::RenderTarget {
                    width: a.count("width", 1280)?,
                    height: a.count("height", 720)?,
                    targets: a.count("targets", 2)?.min(1 << 16) as u32,
                },
                a.count("frames", 4)?,
            ),
            "texture" => (
                Kind::Texture {
                    size: a.count("size", 1024)?.min(1 << 14),
                    textures: a.count("textures", 16)?.min(1 << 16) as u32,
                    mips: a.flag("mips", true)?,
                    draws: a.count("draws", 2000)?,
                    window: a.count("window", 16)?,
                },
                a.count("frames", 2)?,
            ),
            "vertex-buffer" => {
                let k = Kind::Vertex {
                    buffers: a.count("buffers", 8)?.min(1 << 16) as u32,
                    bytes: a.size("bytes", 4 << 20)?,
                    draws: a.count("draws", 400)?,
                    verts: a.count("verts", 1000)?,
                    stride: a.size("stride", 32)?.max(1),
                };
                (k, a.count("frames", 2)?)
            }
            "small-bos" => {
                let (min, max) = (a.size("min", 4 << 10)?, a.size("max", 64 << 10)?);
                if min == 0 || max < min {
                    return Err(a.err(format!("min = {min}, max = {max}: need 0 < min <= max")));
                }
                let k = Kind::SmallBos {
                    count: a.count("count", 4000)?.min(1 << 20) as u32,
                    min,
                    max,
                    accesses: a.count("accesses", 100_000)?,
                    churn: a.frac("churn", 0.05)?,
                };
                (k, a.count("frames", 4)?)
            }
            other => {
                return Err(a.err(format!(
                    "'{other}' is not a GPU workload; use one of {}",
                    NAMES.join(", ")
                )));
            }
        };
        let seed = a.count("seed", 1)?;
        if let Some(k) = a.kv.keys().next() {
            return Err(a.err(format!("unknown key '{k}' (docs/gpu.md lists each workload's keys)")));
        }
        Ok(GpuWorkload {
            spec: spec.to_string(),
            kind,
            frames,
            frame: 0,
            rng: SplitMix64::new(seed),
            queue: VecDeque::new(),
            emitted: 0,
            started: false,
            live: Vec::new(),
            next_id: 1,
        })
    }

    fn access(&mut self, bo: u32, offset: u64, write: bool) {
        self.queue.push_back(GpuEvent::Access {
            bo,
            offset: offset & !(LINE - 1),
            write,
        });
    }

    fn create(&mut self, bytes: u64) -> u32 {
        let bo = self.next_id;
        self.next_id += 1;
        self.queue.push_back(GpuEvent::Create { bo, bytes });
        bo
    }

    /// Mip level `l`'s offset and side for a texture of `size` texels per side.
    fn mip(size: u64, l: u32) -> (u64, u64) {
        let mut off = 0;
        for i in 0..l {
            off += (size >> i).max(1).pow(2) * 4;
        }
        (off, (size >> l).max(1))
    }

    fn setup(&mut self) {
        match self.kind.clone() {
            Kind::RenderTarget { width, height, targets } => {
                for _ in 0..targets {
                    self.create(width * height * 4);
                }
            }
            Kind::Texture {
                size, textures, mips, ..
            } => {
                let levels = if mips { 64 - size.leading_zeros() } else { 1 };
                let (bytes, _) = Self::mip(size, levels);
                for _ in 0..textures {
                    self.create(bytes);
                }
            }
            Kind::Vertex { buffers, bytes, .. } => {
                for _ in 0..buffers {
                    self.create(bytes);
                }
            }
            Kind::SmallBos { count, min, max, .. } => {
                for _ in 0..count {
                    let bytes = self.small_size(min, max);
                    let bo = self.create(bytes);
                    self.live.push((bo, bytes));
                }
            }
        }
    }

    fn small_size(&mut self, min: u64, max: u64) -> u64 {
        let steps = (max - min) / 4096 + 1;
        min + self.rng.below(steps) * 4096
    }

    fn frame(&mut self) {
        match self.kind.clone() {
            Kind::RenderTarget { width, height, targets } => {
                let tile = 64;
                for ty in (0..height).step_by(tile) {
                    for tx in (0..width).step_by(tile) {
                        for t in 0..targets {
                            for y in ty..(ty + tile as u64).min(height) {
                                for x in (tx..(tx + tile as u64).min(width)).step_by(16) {
                                    self.access(t + 1, (y * width + x) * 4, true);
                                }
                            }
                        }
                    }
                }
            }
            Kind::Texture {
                size,
                textures,
                mips,
                draws,
                window,
            } => {
                let levels = if mips { 64 - size.leading_zeros() } else { 1 };
                for _ in 0..draws {
                    let tex = 1 + self.rng.below(textures as u64) as u32;
                    let mut l = 0;
                    while l + 1 < levels && self.rng.below(2) == 1 {
                        l += 1;
                    }
                    let (base, side) = Self::mip(size, l);
                    let blocks_per_row = side.div_ceil(4);
                    let w = window.min(side);
                    let (x0, y0) = (self.rng.below(side - w + 1), self.rng.below(side - w + 1));
                    for by in (y0 / 4)..=((y0 + w - 1) / 4) {
                        for bx in (x0 / 4)..=((x0 + w - 1) / 4) {
                            self.access(tex, base + (by * blocks_per_row + bx) * LINE, false);
                        }
                    }
                }
            }
            Kind::Vertex {
                buffers,
                bytes,
                draws,
                verts,
                stride,
            } => {
                for _ in 0..draws {
                    let b = 1 + self.rng.below(buffers as u64) as u32;
                    let span = (verts * stride).min(bytes);
                    let start = self.rng.below(bytes - span + 1);
                    let mut last = u64::MAX;
                    for v in 0..verts {
                        let off = (start + v * stride) % bytes;
                        if off / LINE != last {
                            last = off / LINE;
                            self.access(b, off, false);
                        }
                    }
                }
            }
            Kind::SmallBos {
                min,
                max,
                accesses,
                churn,
                ..
            } => {
                for _ in 0..accesses {
                    let i = self.rng.below(self.live.len() as u64) as usize;
                    let (bo, bytes) = self.live[i];
                    let off = self.rng.below(bytes);
                    let write = self.rng.below(4) == 0;
                    self.access(bo, off, write);
                }
                let n = (self.live.len() as f64 * churn).round() as usize;
                for _ in 0..n {
                    let i = self.rng.below(self.live.len() as u64) as usize;
                    let (bo, _) = self.live.swap_remove(i);
                    self.queue.push_back(GpuEvent::Destroy { bo });
                    let bytes = self.small_size(min, max);
                    let nb = self.create(bytes);
                    self.live.push((nb, bytes));
                }
            }
        }
    }
}

impl GpuSource for GpuWorkload {
    fn next_event(&mut self) -> Result<Option<GpuEvent>, TraceError> {
        if !self.started {
            self.started = true;
            self.setup();
        }
        while self.queue.is_empty() && self.frame < self.frames {
            self.frame += 1;
            self.frame();
        }
        let e = self.queue.pop_front();
        self.emitted += e.is_some() as u64;
        Ok(e)
    }

    fn describe(&self) -> String {
        self.spec.clone()
    }

    fn position(&self) -> String {
        format!("workload '{}' event {}", self.spec, self.emitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(spec: &str) -> Vec<GpuEvent> {
        let mut w = GpuWorkload::parse(spec).unwrap();
        std::iter::from_fn(|| w.next_event().unwrap()).collect()
    }

    #[test]
    fn render_target_writes_every_line_once_per_frame() {
        // 128×64 pixels, one target: 32 KiB = 512 lines; 2 frames: 1,024 writes.
        let ev = all("render-target:width=128,height=64,targets=1,frames=2");
        assert_eq!(ev[0], GpuEvent::Create { bo: 1, bytes: 32 << 10 });
        assert_eq!(ev.len(), 1 + 1024);
        assert!(ev[1..]
            .iter()
            .all(|e| matches!(e, GpuEvent::Access { bo: 1, write: true, .. })));
    }

    #[test]
    fn texture_mip_chain_and_footprint() {
        // 8×8 texels with mips: levels 8², 4², 2², 1² × 4 bytes = 256+64+16+4 = 340 bytes.
        let ev = all("texture:size=8,textures=1,draws=1,window=4,frames=1,seed=3");
        assert_eq!(ev[0], GpuEvent::Create { bo: 1, bytes: 340 });
        // A 4×4 window covers 1 to 4 blocks of 4×4 texels.
        assert!((2..=5).contains(&ev.len()), "{ev:?}");
    }

    #[test]
    fn small_bos_churn_destroys_and_creates() {
        // 10 BOs, churn 0.5: 5 destroyed and 5 created per frame; 2 frames.
        let ev = all("small-bos:count=10,accesses=20,churn=0.5,frames=2");
        let creates = ev.iter().filter(|e| matches!(e, GpuEvent::Create { .. })).count();
        let destroys = ev.iter().filter(|e| matches!(e, GpuEvent::Destroy { .. })).count();
        assert_eq!((creates, destroys), (20, 10));
    }

    #[test]
    fn bad_specs_name_the_problem() {
        for (spec, want) in [
            ("shader", "not a GPU workload"),
            ("texture:size=0", "size = 0"),
            ("vertex-buffer:colour=red", "unknown key 'colour'"),
            ("small-bos:min=64K,max=4K", "need 0 < min <= max"),
        ] {
            let e = GpuWorkload::parse(spec).err().unwrap().to_string();
            assert!(e.contains(want), "{spec}: {e}");
        }
    }
}
