//! A machine's requesters in one collection: its cores (stage-1 translators, or nested
//! ones on a machine with `[vm]`; a machine has one kind) and its devices (GPUs). Every
//! shootdown, report, exit and root-cache drop walks them once, through
//! [`Requesters::each_mut`] / [`Requesters::each`], as [`Translator`]s; only the hot
//! path reaches a core by its concrete type (static dispatch, no per-reference `match`).
//!
//! Adding a kind of requester (an IOMMU client, say): a translator in translator/, a
//! vector here walked by `each`/`each_mut`, and how the machine attaches it.

use crate::stats::{Report, Stats};
use crate::translator::{Device, Nested, Stage1, Translator};
use mmulab_model::addr::Asid;

/// Every requester of a machine.
#[derive(Default)]
pub(crate) struct Requesters {
    /// CPU cores with a stage-1 translator each (empty on a `[vm]` machine).
    pub(crate) cpus: Vec<Stage1>,
    /// Virtualized cores of a `[vm]` machine: nested translators.
    pub(crate) vcpus: Vec<Nested>,
    /// Devices beside the cores: GPUs.
    pub(crate) gpus: Vec<Device>,
}

impl Requesters {
    /// Calls `f` on every requester, cores first, then devices.
    pub(crate) fn each(&self, mut f: impl FnMut(&dyn Translator)) {
        self.cpus.iter().for_each(|c| f(c));
        self.vcpus.iter().for_each(|c| f(c));
        self.gpus.iter().for_each(|d| f(d));
    }

    /// Calls `f` on every requester, mutably, cores first, then devices.
    pub(crate) fn each_mut(&mut self, mut f: impl FnMut(&mut dyn Translator)) {
        self.cpus.iter_mut().for_each(|c| f(c));
        self.vcpus.iter_mut().for_each(|c| f(c));
        self.gpus.iter_mut().for_each(|d| f(d));
    }

    /// Every requester drops its cached translations of `[start, end)` of `asid` (a
    /// device's MMU is flushed by its driver instead: a no-op there).
    pub(crate) fn invalidate_range(&mut self, asid: Asid, start: u64, end: u64) {
        self.each_mut(|t| t.invalidate_range(asid, start, end));
    }

    /// Address spaces changed: every requester drops its cached page-table roots.
    pub(crate) fn spaces_changed(&mut self) {
        self.each_mut(|t| t.spaces_changed());
    }

    /// Every requester adds its counters to `s`.
    pub(crate) fn report(&self, s: &mut Stats) {
        self.each(|t| t.report(s));
    }
}

impl Report for Requesters {
    fn report(&self, s: &mut Stats) {
        Requesters::report(self, s);
    }
}
