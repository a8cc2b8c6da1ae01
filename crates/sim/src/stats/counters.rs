//! The machine's own counters ([`Counters`]), declared once in [`counters!`]: the macro
//! writes the struct and its [`Delta`] (warm-up subtraction), so a counter added to the
//! list is subtracted by construction and no counter can be added outside it.

use super::since::Delta;
use mmulab_trace::AccessKind;

/// Declares [`Counters`]: each field is a counter (a `u64`, an array or a vector of
/// them) that [`Delta::less`] subtracts.
macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty ),* $(,)?) => {
        /// Counters kept by the machine itself (the models keep their own).
        #[derive(Clone, Debug, Default)]
        pub struct Counters {
            $( $(#[$doc])* pub $name: $ty, )*
        }

        impl Delta for Counters {
            fn less(&mut self, before: &Counters) {
                $( self.$name.less(&before.$name); )*
            }
        }

        impl Counters {
            /// Every counter's name, in declaration order (tests walk them).
            pub const NAMES: &'static [&'static str] = &[$( stringify!($name) ),*];
        }
    };
}

counters! {
    /// References simulated.
    references: u64,
    /// References by kind, indexed by `AccessKind as usize`: loads, stores,
    /// instruction fetches.
    kinds: [u64; 3],
    /// Instruction fetches not translated because no TLB level serves instructions.
    ifetches_untranslated: u64,
    /// Hardware walks (a faulting walk and the walk after the fault count as two).
    walks: u64,
    /// Descriptors read by walks.
    walk_reads: u64,
    /// Walks by the level they started at (after page-walk-cache hits).
    walk_start_level: Vec<u64>,
    /// Cycles of walks (descriptor reads, PWC lookups, dirty-bit writes of stores to
    /// clean TLB entries). Derived by each translator's report from the counts (walk
    /// reads, walks, `dirty_writes`) and the latencies, not counted per reference.
    walk_cycles: u64,
    /// Cycles of TLB lookups: derived by each translator's report from each level's
    /// lookups and latency.
    tlb_cycles: u64,
    /// Dirty bits the hardware wrote to a descriptor for a store that hit a clean TLB
    /// entry (one memory reference each; also counted in `ad_updates`).
    dirty_writes: u64,
    /// Page faults.
    faults: u64,
    /// Cycles the OS spent in faults.
    fault_cycles: u64,
    /// Accessed/dirty bit updates of leaf descriptors.
    ad_updates: u64,
    /// Ranges invalidated on behalf of the OS.
    shootdowns: u64,
    /// Touch events applied (pages a sampled recording saw first touched between its
    /// windows; not references, their faults are in `faults`).
    touches: u64,
    /// Access flag faults (software A/D, `machine.ad = "software"`).
    af_faults: u64,
    /// Permission faults of stores to writable-clean pages (software A/D).
    dirty_faults: u64,
}

impl Counters {
    /// Zeroed counters for a machine with `_levels` TLB levels and `pt_levels` page-table
    /// levels.
    pub fn new(_levels: usize, pt_levels: usize) -> Counters {
        Counters {
            walk_start_level: vec![0; pt_levels],
            ..Default::default()
        }
    }

    /// Loads simulated.
    pub fn loads(&self) -> u64 {
        self.kinds[AccessKind::Load as usize]
    }

    /// Stores simulated.
    pub fn stores(&self) -> u64 {
        self.kinds[AccessKind::Store as usize]
    }

    /// Instruction fetches seen (translated or not).
    pub fn ifetches(&self) -> u64 {
        self.kinds[AccessKind::IFetch as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every counter is subtracted: set each to 10 in `after` and 3 in `before`
    /// (through its name, so a counter added to the list is covered), and every one of
    /// them is 7 after `less`.
    #[test]
    fn every_counter_is_subtracted() {
        fn set(c: &mut Counters, v: u64) {
            // The list is the macro's: a field here that is not in NAMES fails below.
            let Counters {
                references,
                kinds,
                ifetches_untranslated,
                walks,
                walk_reads,
                walk_start_level,
                walk_cycles,
                tlb_cycles,
                dirty_writes,
                faults,
                fault_cycles,
                ad_updates,
                shootdowns,
                touches,
                af_faults,
                dirty_faults,
            } = c;
            for x in [
                references,
                ifetches_untranslated,
                walks,
                walk_reads,
                walk_cycles,
                tlb_cycles,
                dirty_writes,
                faults,
                fault_cycles,
                ad_updates,
                shootdowns,
                touches,
                af_faults,
                dirty_faults,
            ] {
                *x = v;
            }
            *kinds = [v; 3];
            *walk_start_level = vec![v; 4];
        }
        let (mut after, mut before) = (Counters::default(), Counters::default());
        set(&mut after, 10);
        set(&mut before, 3);
        after.less(&before);
        let mut want = Counters::default();
        set(&mut want, 7);
        assert_eq!(format!("{after:?}"), format!("{want:?}"));
        // The destructuring above names every field (it would not compile otherwise),
        // and NAMES has as many.
        assert_eq!(Counters::NAMES.len(), 16);
    }
}
