//! GPUs on a machine: attaching a GPU of a profile (config/gpu.rs) to a [`Machine`] as
//! a device requester (`translator::Device`) over its shared physical memory, and
//! running a GPU trace or workload through it.

use super::Machine;
use crate::config::gpu::GpuProfile;
use crate::stats::gpu::GpuStats;
use crate::translator::{Device, Translator};
use crate::SimError;
use mmulab_model::gpu::driver::Gpu;
use mmulab_model::gpu::GpuError;
use mmulab_trace::gpu::{GpuEvent, GpuSource};
use mmulab_trace::{AccessKind, MemRef};

impl Machine {
    /// Attaches a GPU of `profile` beside the cores; returns its index. Its scratch page
    /// and every BO's memory come from the machine's physical memory.
    pub fn attach_gpu(&mut self, profile: &GpuProfile) -> Result<usize, SimError> {
        // The machine was checked when it was built; with the GPU's MMU it must still fit.
        let mut need = crate::config::limits::host_need(&self.spec);
        need.extend(crate::config::limits::gpu_need(&profile.name, &profile.mmu));
        need.check(
            "this machine with its GPU",
            "lower the GPU profile's [mmu] tlb_entries or ptec_lines (docs/gpu.md)",
        )
        .map_err(SimError::Config)?;
        let gpu = Gpu::new(profile.driver, profile.mmu, &mut self.sys.mem)
            .map_err(|e| SimError::Gpu(format!("GPU profile {}: {e}", profile.name)))?;
        self.req.gpus.push(Device {
            profile: profile.name.clone(),
            pages: profile.pages.clone(),
            gpu,
        });
        Ok(self.req.gpus.len() - 1)
    }

    /// Applies one GPU event to GPU `gpu`; `at` names where it came from in errors.
    pub fn gpu_event(&mut self, gpu: usize, e: &GpuEvent, at: &dyn Fn() -> String) -> Result<(), SimError> {
        let d = &mut self.req.gpus[gpu];
        let r = match *e {
            GpuEvent::Create { bo, bytes } => d.create(&mut self.sys, bo, bytes),
            GpuEvent::Destroy { bo } => d.destroy(&mut self.sys, bo),
            GpuEvent::Access { bo, offset, write } => d.gpu.va_of(bo, offset).map(|va| {
                let kind = if write { AccessKind::Store } else { AccessKind::Load };
                let r = MemRef {
                    addr: va,
                    size: 64,
                    kind,
                    core: 0,
                    asid: 0,
                };
                // A device translator never stops (module doc of translator::device).
                let _ = d.access(&mut self.sys, &r);
            }),
        };
        r.map_err(|e| match e {
            GpuError::UnknownBo { bo, .. } => SimError::Gpu(
                GpuError::UnknownBo {
                    bo,
                    context: format!(" at {}", at()),
                }
                .to_string(),
            ),
            e => SimError::Gpu(format!("{}: {e}", at())),
        })
    }

    /// Runs a GPU event stream through GPU `gpu`; returns the events applied.
    pub fn run_gpu(&mut self, gpu: usize, src: &mut dyn GpuSource) -> Result<u64, SimError> {
        let mut n = 0;
        while let Some(e) = src.next_event()? {
            self.gpu_event(gpu, &e, &|| src.position())?;
            n += 1;
            if n % 65536 == 0 && crate::stop::stop_requested() {
                break;
            }
        }
        Ok(n)
    }

    /// Fragments the machine's memory at GPU `gpu`'s kernel-page granularity
    /// ([`mmulab_model::gpu::driver::fragment`]); returns the frames pinned.
    pub fn fragment_for_gpu(&mut self, gpu: usize, used: f64, clean: f64, seed: u64) -> u64 {
        let kp = self.req.gpus[gpu].gpu.spec().kernel_page;
        mmulab_model::gpu::driver::fragment(&mut self.sys.mem, used, clean, kp, seed)
    }

    /// The statistics of GPU `gpu`.
    pub fn gpu_stats(&self, gpu: usize) -> GpuStats {
        GpuStats::of(&self.req.gpus[gpu])
    }
}
