//! First touches between the windows of a sampled recording ([`Event::Touch`]): the page
//! tables a program built while the recorder was not recording. Without them a sampled
//! trace's windows read memory the simulated program never wrote (mapped to the zero
//! page, or faulted in at the window's first reference), and the simulated THP run holds
//! a fraction of the huge pages the real one did (issue 47 item 1).
//!
//! A touch is an access without a reference: the OS handles the faults that access would
//! take (the same [`Machine::fault`] a translator's fault reaches, counted), the leaf's
//! accessed (and, for a write, dirty) bits are set as the hardware walker would set them,
//! and on a machine with `[vm]` the guest frame is backed by the host. No TLB, page-walk
//! cache or data cache sees it, and no reference is counted: the windows' counts stay
//! the windows'. With software A/D (`machine.ad = "software"`) the bits are set as
//! hardware would set them: the access-flag fault that access would take is not counted
//! (`ad_faults` holds the windows' only).
//!
//! [`Event::Touch`]: mmulab_trace::Event::Touch

use super::Machine;
use crate::SimError;
use mmulab_model::addr::Asid;
use mmulab_model::translation::Attrs;
use mmulab_model::walk;
use mmulab_trace::{AccessKind, MemRef};

/// Faults one touch may take before it is an error (a read of an empty page maps the
/// zero page, a write then copies it: two; a policy that keeps refusing is a model bug).
const MAX_FAULTS: usize = 8;

impl Machine {
    /// Applies a first touch of the page at `addr` of `asid` (see the module contract).
    pub(super) fn touch(&mut self, asid: Asid, addr: u64, write: bool) -> Result<(), SimError> {
        let r = MemRef {
            addr,
            size: 1,
            kind: if write { AccessKind::Store } else { AccessKind::Load },
            core: 0,
            asid,
        };
        let (end, space) = self.spec.format.user_va_end();
        if addr >= end {
            return Err(SimError::Model(mmulab_model::ModelError::Input(format!(
                "a touch event (asid {asid}) of page {addr:#x} lies outside the {space} [0, {end:#x}): no user program touched it; give `--outside-user drop` to drop such touches with the references outside"
            ))));
        }
        self.sys.count_touch();
        if self.bg.track_touched {
            self.bg.touch(&r);
        }
        let mut faults = 0;
        let leaf = loop {
            let si = self.sys.space(asid)?;
            let space = self.sys.spaces[si].as_ref().expect("space created");
            let (fmt, root) = (space.fmt, space.root);
            let found =
                walk::lookup(&mut self.sys.mem, fmt, root, addr).filter(|m| !write || m.attrs.has(Attrs::WRITABLE));
            match found {
                Some(m) => {
                    let want = if write {
                        Attrs::ACCESSED | Attrs::DIRTY
                    } else {
                        Attrs::ACCESSED
                    };
                    if !m.attrs.has(want) {
                        walk::set_leaf_attrs(&mut self.sys.mem, fmt, root, addr, m.attrs.with(want));
                    }
                    break m;
                }
                None if faults < MAX_FAULTS => {
                    faults += 1;
                    self.fault(&r)?;
                }
                None => {
                    return Err(SimError::Model(mmulab_model::ModelError::Conflict(format!(
                        "asid {asid}: a touch of {addr:#x} still finds no usable page after {MAX_FAULTS} faults"
                    ))))
                }
            }
        };
        if self.sys.host.is_some() {
            self.back_in_host(asid, addr, leaf.pa + (addr - leaf.va))?;
        }
        Ok(())
    }

    /// On a machine with `[vm]`: backs in the host the guest frame `gpa` and every guest
    /// page-table page a walk of `addr` reads (the hardware walk of the unrecorded access
    /// translated them through stage 2 too; without them the window's first walk takes
    /// the host faults of the tables).
    fn back_in_host(&mut self, asid: Asid, addr: u64, gpa: u64) -> Result<(), SimError> {
        let si = self.sys.space(asid)?;
        let space = self.sys.spaces[si].as_ref().expect("space created");
        let (fmt, root) = (space.fmt, space.root);
        let mut reads = walk::WalkReads::default();
        // A walk with no walk cache reads every level: the software walk's tables.
        let mut pwc = walk::Pwc::new(fmt, &[]);
        walk::translate_recorded(&mut self.sys.mem, fmt, root, asid, addr, &mut pwc, &mut reads);
        let mut frames: Vec<u64> = reads.reads[..reads.n]
            .iter()
            .map(|&(table, index)| table + 8 * index as u64)
            .collect();
        frames.push(gpa);
        for g in frames {
            let unbacked = match self.sys.host.as_deref_mut() {
                Some(h) if g < h.guest_bytes => {
                    let (hfmt, hroot) = (h.space.fmt, h.root());
                    walk::lookup(&mut h.mem, hfmt, hroot, g).is_none()
                }
                _ => false,
            };
            if unbacked {
                self.host_fault(g, true, None)?;
            }
        }
        Ok(())
    }
}
