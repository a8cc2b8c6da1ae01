use super::{Tlb, TlbSpec};
use crate::addr::Asid;
use crate::translation::Translation;

/// Longest chain of levels a lookup may traverse.
pub const MAX_DEPTH: usize = 8;

/// The TLB levels of one core, wired as a tree: data references enter at the first level
/// serving data (or unified), instruction fetches at the first serving instr (or
/// unified); a miss falls through to the level's `next`.
///
/// Policy: on a hit at level k every level before it on the path is filled (the usual
/// refill of upper levels from a lower one); after a miss in the last level the walk
/// runs and every level on the path is filled. Levels are neither inclusive nor
/// exclusive: evictions are never propagated.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    levels: Vec<Tlb>,
    /// The levels a data / an instruction lookup visits, in order: the entry level, then
    /// its `next` chain (computed once).
    data_path: Path,
    instr_path: Path,
}

#[derive(Clone, Copy, Debug)]
struct Path {
    levels: [u8; MAX_DEPTH],
    len: usize,
}

impl Path {
    fn new(specs: &[TlbSpec], entry: usize) -> Path {
        let mut p = Path { levels: [0; MAX_DEPTH], len: 0 };
        let mut cur = Some(entry);
        while let Some(i) = cur {
            if p.len == MAX_DEPTH || i >= specs.len() {
                break;
            }
            p.levels[p.len] = i as u8;
            p.len += 1;
            cur = specs[i].next;
        }
        p
    }
}

/// The outcome of a lookup.
#[derive(Clone, Copy, Debug)]
pub struct Lookup {
    /// Levels looked up, in order.
    pub path: [u8; MAX_DEPTH],
    /// How many entries of `path` are used.
    pub len: usize,
    /// The hit (level index, slot, translation), if any level hit.
    pub hit: Option<(usize, usize, Translation)>,
    /// Sum of the latencies of the levels looked up.
    pub cycles: u64,
}

impl Hierarchy {
    /// Builds levels from validated specs (entry points and acyclic `next` links are
    /// checked by config validation).
    pub fn new(specs: Vec<TlbSpec>, data_entry: usize, instr_entry: usize) -> Hierarchy {
        let data_path = Path::new(&specs, data_entry);
        let instr_path = Path::new(&specs, instr_entry);
        Hierarchy { levels: specs.into_iter().map(Tlb::new).collect(), data_path, instr_path }
    }

    /// The levels, in config order.
    pub fn levels(&self) -> &[Tlb] {
        &self.levels
    }

    /// Mutable access to the levels (invalidation, tests).
    pub fn levels_mut(&mut self) -> &mut [Tlb] {
        &mut self.levels
    }

    /// The level references of this kind enter at.
    #[inline(always)]
    pub fn entry_level(&mut self, instr: bool) -> &mut Tlb {
        let i = if instr { self.instr_path.levels[0] } else { self.data_path.levels[0] } as usize;
        &mut self.levels[i]
    }

    /// Looks `va` up along the path for its kind of reference. The entry level is looked
    /// up at its own call site (inlined apart from the loop over the levels behind it),
    /// so the host's branch predictor keeps separate histories for the first level and
    /// the rest — their hit rates and set sizes differ.
    #[inline]
    pub fn lookup(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        let path = if instr { self.instr_path } else { self.data_path };
        let first = path.levels[0] as usize;
        let tlb = &mut self.levels[first];
        let mut cycles = tlb.spec().latency as u64;
        if let Some((slot, t)) = tlb.lookup(va, asid) {
            return Lookup { path: path.levels, len: 1, hit: Some((first, slot, t)), cycles };
        }
        for n in 1..path.len {
            let i = path.levels[n] as usize;
            let tlb = &mut self.levels[i];
            cycles += tlb.spec().latency as u64;
            if let Some((slot, t)) = tlb.lookup_behind(va, asid) {
                return Lookup { path: path.levels, len: n + 1, hit: Some((i, slot, t)), cycles };
            }
        }
        Lookup { path: path.levels, len: path.len, hit: None, cycles }
    }

    /// Fills the levels of `path[..upto]` with `t` for an access to `va`.
    #[inline]
    pub fn fill(&mut self, path: &[u8], t: &Translation, va: u64) {
        for &i in path {
            self.levels[i as usize].fill(t, va);
        }
    }

    /// Sets `bits` in every level's cached entry covering `va` (no replacement update).
    pub fn add_attrs(&mut self, va: u64, asid: Asid, bits: u16) {
        for t in &mut self.levels {
            t.add_attrs(va, asid, bits);
        }
    }

    /// Removes every entry of `asid` overlapping `[start, end)` from every level.
    pub fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) -> usize {
        self.levels.iter_mut().map(|t| t.invalidate_range(asid, start, end)).sum()
    }
}
