//! The data references of one x86-64 instruction, from its bytes and the registers it
//! starts with (the ptrace sampler's decoder; pure, so that it is tested without a
//! process).
//!
//! Decoding and the list of memory locations an instruction uses (its explicit memory
//! operand, and the implicit ones of push/pop/call/ret, string instructions, `enter`,
//! `leave`, xsave …) come from the `iced-x86` crate (`InstructionInfoFactory`); each
//! location's address is evaluated from the registers with `UsedMemory::virtual_address`
//! (segment overrides `fs:`/`gs:` add the thread's `fs_base`/`gs_base`; the other segment
//! bases are 0 in 64-bit mode). The kinds follow mmtrace's (Valgrind's IR): a read is a
//! load, a write a store, a read-modify-write a load and then a store.
//!
//! Stated approximations:
//! - conditional accesses (`CondRead`/`CondWrite`: `cmov` with a memory operand, masked
//!   AVX loads and stores) are recorded as if they happened;
//! - a REP string instruction is stepped one iteration at a time (the single-step trap
//!   comes after each iteration), so each call sees one element; with the count register at
//!   0 nothing is accessed;
//! - gathers and scatters (VSIB addressing: the index is a vector register, which
//!   `PTRACE_GETREGS` does not return) are not recorded; they are counted
//!   ([`Refs::vsib_skipped`]).

use iced_x86::{Decoder, DecoderOptions, Instruction, InstructionInfoFactory, MemorySize, OpAccess, OpKind, Register};

use mmulab_trace::{AccessKind, MemRef};

/// The registers an address can use: the 16 general registers in x86 encoding order
/// (RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8 … R15), and the fs/gs bases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    /// RAX … R15 in encoding order.
    pub gpr: [u64; 16],
    /// The instruction pointer (the instruction's address).
    pub rip: u64,
    /// The `fs:` base (the thread pointer on x86-64 Linux).
    pub fs_base: u64,
    /// The `gs:` base.
    pub gs_base: u64,
}

impl Regs {
    /// The value of `reg` as an address operand sees it (a 32- or 16-bit register is the
    /// low part of its 64-bit register); segment registers give their base.
    fn value(&self, reg: Register) -> Option<u64> {
        match reg {
            Register::FS => return Some(self.fs_base),
            Register::GS => return Some(self.gs_base),
            Register::ES | Register::CS | Register::SS | Register::DS => return Some(0),
            Register::RIP => return Some(self.rip),
            _ => {}
        }
        let full = reg.full_register();
        if !full.is_gpr64() {
            return None;
        }
        let v = self.gpr[full.number()];
        Some(match reg.size() {
            8 => v,
            4 => v & 0xFFFF_FFFF,
            2 => v & 0xFFFF,
            _ => return None,
        })
    }
}

/// The decoder and what it could not record.
pub struct Refs {
    factory: InstructionInfoFactory,
    /// Gathers and scatters seen (not recorded: their index is a vector register).
    pub vsib_skipped: u64,
    /// Addresses that could not be evaluated (a register the callback does not know).
    pub unevaluated: u64,
}

impl Default for Refs {
    fn default() -> Self {
        Refs::new()
    }
}

/// Why an instruction gave no references.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecodable {
    /// The bytes are not a valid instruction (or too few were readable).
    Invalid,
}

impl Refs {
    /// A decoder.
    pub fn new() -> Refs {
        Refs {
            factory: InstructionInfoFactory::new(),
            vsib_skipped: 0,
            unevaluated: 0,
        }
    }

    /// Decodes the instruction at the start of `bytes` (which are at `regs.rip`) and
    /// appends its data references, computed from `regs` (the registers before it runs), to
    /// `out`. Returns the instruction's length.
    pub fn refs(&mut self, bytes: &[u8], regs: &Regs, out: &mut Vec<MemRef>) -> Result<usize, Undecodable> {
        let mut dec = Decoder::with_ip(64, bytes, regs.rip, DecoderOptions::NONE);
        let instr = dec.decode();
        if instr.is_invalid() {
            return Err(Undecodable::Invalid);
        }
        if let Some(count) = string_count(&instr, regs) {
            if count == 0 {
                return Ok(instr.len());
            }
        }
        let info = self.factory.info(&instr);
        // Loads first, then stores (an instruction reads before it writes; Valgrind's IR,
        // and so mmtrace, orders them so too).
        for store in [false, true] {
            for m in info.used_memory() {
                let (load, st) = match m.access() {
                    OpAccess::Read | OpAccess::CondRead => (true, false),
                    OpAccess::Write | OpAccess::CondWrite => (false, true),
                    OpAccess::ReadWrite | OpAccess::ReadCondWrite => (true, true),
                    _ => continue, // None, NoMemAccess (lea, prefetch)
                };
                if !(if store { st } else { load }) {
                    continue;
                }
                if m.index().is_vector_register() {
                    if !store || !load {
                        self.vsib_skipped += 1;
                    }
                    continue;
                }
                let Some(addr) = m.virtual_address(0, |r, _, _| regs.value(r)) else {
                    self.unevaluated += 1;
                    continue;
                };
                // A REP string access is listed with an unknown size: one element per step.
                let mut size = m.memory_size().size();
                if size == 0 || m.memory_size() == MemorySize::Unknown {
                    size = instr.memory_size().size();
                }
                let size = size.clamp(1, u16::MAX as usize) as u16;
                let kind = if store { AccessKind::Store } else { AccessKind::Load };
                out.push(MemRef::new(addr, kind, size));
            }
        }
        Ok(instr.len())
    }
}

/// For a string instruction with a REP/REPE/REPNE prefix, the count register as its
/// address size sees it.
fn string_count(instr: &Instruction, regs: &Regs) -> Option<u64> {
    if !(instr.has_rep_prefix() || instr.has_repne_prefix()) {
        return None;
    }
    let mask = (0..instr.op_count()).find_map(|i| match instr.op_kind(i) {
        OpKind::MemorySegRSI | OpKind::MemoryESRDI | OpKind::MemorySegRDI => Some(u64::MAX),
        OpKind::MemorySegESI | OpKind::MemoryESEDI | OpKind::MemorySegEDI => Some(0xFFFF_FFFF),
        OpKind::MemorySegSI | OpKind::MemoryESDI | OpKind::MemorySegDI => Some(0xFFFF),
        _ => None,
    })?;
    Some(regs.gpr[1] & mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAX: usize = 0;
    const RCX: usize = 1;
    const RBX: usize = 3;
    const RSP: usize = 4;
    const RSI: usize = 6;
    const RDI: usize = 7;

    fn regs() -> Regs {
        let mut r = Regs {
            rip: 0x40_1000,
            fs_base: 0x7f00_0000_0000,
            ..Regs::default()
        };
        r.gpr[RAX] = 0x1000;
        r.gpr[RBX] = 0x2_0000;
        r.gpr[RCX] = 3;
        r.gpr[RSP] = 0x7ffe_0000;
        r.gpr[RSI] = 0x5000;
        r.gpr[RDI] = 0x9000;
        r
    }

    fn refs_of(bytes: &[u8], r: &Regs) -> (usize, Vec<(u64, AccessKind, u16)>) {
        let mut out = Vec::new();
        let n = Refs::new().refs(bytes, r, &mut out).unwrap();
        (n, out.iter().map(|m| (m.addr, m.kind, m.size)).collect())
    }

    #[test]
    fn explicit_operands_use_the_registers_before_the_instruction() {
        let r = regs();
        // mov [rbx+rax*8+0x10], rcx (48 89 4c c3 10): store 8 bytes at
        // 0x20000 + 0x1000·8 + 0x10 = 0x28010.
        assert_eq!(
            refs_of(&[0x48, 0x89, 0x4c, 0xc3, 0x10], &r),
            (5, vec![(0x2_8010, AccessKind::Store, 8)])
        );
        // mov eax, [rbx] (8b 03): load 4 bytes at 0x20000.
        assert_eq!(refs_of(&[0x8b, 0x03], &r), (2, vec![(0x2_0000, AccessKind::Load, 4)]));
        // add [rbx], al (00 03): read-modify-write: a load then a store of 1 byte.
        assert_eq!(
            refs_of(&[0x00, 0x03], &r).1,
            vec![(0x2_0000, AccessKind::Load, 1), (0x2_0000, AccessKind::Store, 1)]
        );
        // lea rax, [rbx+8] (48 8d 43 08): no memory access.
        assert_eq!(refs_of(&[0x48, 0x8d, 0x43, 0x08], &r), (4, vec![]));
        // mov rax, [rip+0x100] (48 8b 05 00 01 00 00), 7 bytes at 0x401000: the address is
        // the next instruction's (0x401007) + 0x100 = 0x401107.
        assert_eq!(
            refs_of(&[0x48, 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00], &r).1,
            vec![(0x40_1107, AccessKind::Load, 8)]
        );
        // mov rax, fs:[0x28] (64 48 8b 04 25 28 00 00 00): fs base + 0x28.
        assert_eq!(
            refs_of(&[0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0], &r).1,
            vec![(0x7f00_0000_0028, AccessKind::Load, 8)]
        );
        // mov eax, [ebx] with the address-size prefix (67 8b 03): ebx = low 32 bits.
        let mut hi = r;
        hi.gpr[RBX] = 0xAAAA_0000_0002_0000;
        assert_eq!(
            refs_of(&[0x67, 0x8b, 0x03], &hi).1,
            vec![(0x2_0000, AccessKind::Load, 4)]
        );
    }

    #[test]
    fn implicit_stack_and_string_accesses() {
        let r = regs();
        // push rax (50): store 8 at rsp − 8; pop rcx (59): load 8 at rsp.
        assert_eq!(refs_of(&[0x50], &r).1, vec![(0x7ffe_0000 - 8, AccessKind::Store, 8)]);
        assert_eq!(refs_of(&[0x59], &r).1, vec![(0x7ffe_0000, AccessKind::Load, 8)]);
        // call rel32 (e8 00 00 00 00): pushes the return address; ret (c3): pops it.
        assert_eq!(
            refs_of(&[0xe8, 0, 0, 0, 0], &r).1,
            vec![(0x7ffe_0000 - 8, AccessKind::Store, 8)]
        );
        assert_eq!(refs_of(&[0xc3], &r).1, vec![(0x7ffe_0000, AccessKind::Load, 8)]);
        // movsq (48 a5): load 8 at rsi, store 8 at rdi.
        assert_eq!(
            refs_of(&[0x48, 0xa5], &r).1,
            vec![(0x5000, AccessKind::Load, 8), (0x9000, AccessKind::Store, 8)]
        );
        // rep stosb (f3 aa) with rcx = 3: one iteration per step, one byte at rdi.
        assert_eq!(refs_of(&[0xf3, 0xaa], &r).1, vec![(0x9000, AccessKind::Store, 1)]);
        // ... and with rcx = 0 it accesses nothing.
        let mut z = r;
        z.gpr[RCX] = 0;
        assert_eq!(refs_of(&[0xf3, 0xaa], &z).1, vec![]);
    }

    #[test]
    fn invalid_bytes_and_gathers() {
        let r = regs();
        let mut d = Refs::new();
        let mut out = Vec::new();
        // 0x06 (push es) is invalid in 64-bit mode.
        assert_eq!(d.refs(&[0x06], &r, &mut out), Err(Undecodable::Invalid));
        // A truncated instruction (mov [rbx+rax*8+0x10], rcx without its displacement).
        assert_eq!(
            d.refs(&[0x48, 0x89, 0x4c, 0xc3], &r, &mut out),
            Err(Undecodable::Invalid)
        );
        // vpgatherdd xmm0, [rax+xmm1*4], xmm2 (c4 e2 69 90 04 88): skipped and counted.
        assert_eq!(d.refs(&[0xc4, 0xe2, 0x69, 0x90, 0x04, 0x88], &r, &mut out), Ok(6));
        assert!(out.is_empty());
        assert_eq!(d.vsib_skipped, 1);
    }
}
