/* mmtrace: a Valgrind tool that records a program's data references for mmulab, in binary,
   optionally in sampled windows. MIT OR Apache-2.0.

   Why not Lackey: `valgrind --tool=lackey --trace-mem=yes` formats every reference as a
   text line (VG_(printf)) that mmulab then parses: about 0.3-1.4 M references/s here.
   mmtrace calls one small helper per load or store (as Lackey does) but appends a 16-byte
   record to a buffer that is written to a file descriptor 1 MiB at a time.

   Records (little-endian): u64 address, u32 size, u32 kind (0 load, 1 store). At exit one
   trailer record: u64 the number of references the program made (recorded or not), u32
   0xFFFFFFFF, u32 0xFFFFFFFF.

   Sampled (--sample-on/--sample-period), the references between windows are not recorded,
   but the first read and the first write of each 4 KiB page among them are, as touch
   records: u64 the page's address, u32 0, u32 2 (first read) or 3 (first write). The
   simulator faults those pages in as the program did (mmulab_trace::Event::Touch), so
   that a window finds the memory the program built between windows. The pages seen so far
   are kept as two bits per page (read, written) in a two-level table over the 48-bit
   address space: 64 KiB for each GiB of address space touched.

   Each writable mapping the program makes (mmap, mremap; glibc's malloc maps a large
   block with its own mmap) is an allocation record: u64 the mapping's first address,
   u32 its length in 4 KiB pages, u32 4. The kernel merges neighbouring mappings into one
   VMA, which /proc/PID/maps shows; these records keep each allocation's own extent
   (advise's regions, issue 50 item 1).

   Options: --out-fd=N (required: where the records go), --sample-on=N --sample-period=P
   (record the first N references of every P; default: all). Instruction fetches are not
   recorded (mmulab advise simulates the data TLB).

   The instrumentation follows Lackey's memory tracing (loads, stores, dirty helpers'
   memory effects, CAS, LL/SC, guarded loads and stores); written from Valgrind's public
   tool interface (pub_tool_*.h, libvex_ir.h). */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_options.h"
#include "pub_tool_machine.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"

#define BUF_RECS 65536 /* 1 MiB of records */

typedef struct {
   ULong addr;
   UInt size;
   UInt kind;
} Rec;

static Long out_fd = -1;
static Long sample_on = 0, sample_period = 0;
static Rec buf[BUF_RECS];
static UInt nbuf = 0;
static ULong total = 0;
static ULong countdown = 0;
static Bool recording = False;
static Bool write_failed = False;
static ULong forks = 0;

/* Pages seen (sampled recordings only): page number = address >> 12, below 2^36 (48-bit
   addresses); the top table is indexed by its high 18 bits, each leaf holds two bits for
   each of the 2^18 pages of its GiB (bit 0 read, bit 1 written). */
#define LEAF_BITS 18
static UChar *seen[1u << (36 - LEAF_BITS)];
static ULong last_page = ~0ULL;
static UInt last_bits = 0;

/* Marks a reference of `kind` (0 load, 1 store) to the page of `a`; returns 2 (first
   read) or 3 (first write) when it is the page's first of its kind, else 0. A write
   counts as a read too (a page written is mapped for both). */
static UInt first_touch(Addr a, UInt kind)
{
   ULong page = (ULong)a >> 12;
   UInt want = kind ? 3u : 1u;
   if (page == last_page && (last_bits & want) == want)
      return 0;
   if (page >> 36)
      return 0;
   UChar **leaf = &seen[page >> LEAF_BITS];
   if (*leaf == NULL)
      *leaf = VG_(calloc)("mmtrace.seen", 1, 1u << (LEAF_BITS - 2));
   ULong i = page & ((1u << LEAF_BITS) - 1);
   UChar *b = &(*leaf)[i >> 2];
   UInt shift = (UInt)(i & 3) * 2;
   UInt had = ((UInt)*b >> shift) & 3u;
   *b = (UChar)(*b | (want << shift));
   last_page = page;
   last_bits = had | want;
   if ((had & want) == want)
      return 0;
   return kind ? 3u : 2u;
}

/* fork(): Valgrind keeps instrumenting the child, which inherits the output descriptor.
   The child writes nothing (its references are another address space's and would be
   merged into the parent's trace; the parent's unflushed records are the parent's);
   the parent counts the fork and reports the count before the trailer. */
static void mt_atfork_parent(ThreadId tid) { forks++; }
static void mt_atfork_child(ThreadId tid)
{
   nbuf = 0;
   write_failed = True;
}

static void flush(void)
{
   const char *p = (const char *)buf;
   Long left = (Long)nbuf * (Long)sizeof(Rec);
   while (left > 0 && !write_failed) {
      Int n = VG_(write)((Int)out_fd, p, (Int)left);
      if (n <= 0) {
         write_failed = True; /* the reader went away: keep running, stop writing */
         break;
      }
      p += n;
      left -= n;
   }
   nbuf = 0;
}

static VG_REGPARM(2) void mt_ref(Addr a, HWord size_kind)
{
   total++;
   if (sample_period > 0) {
      UInt touch = first_touch(a, (UInt)(size_kind >> 16));
      if (countdown == 0) {
         recording = !recording;
         countdown = recording ? (ULong)sample_on : (ULong)(sample_period - sample_on);
      }
      countdown--;
      if (!recording) {
         if (touch) {
            buf[nbuf].addr = (ULong)a & ~0xFFFULL;
            buf[nbuf].size = 0;
            buf[nbuf].kind = touch;
            if (++nbuf == BUF_RECS)
               flush();
         }
         return;
      }
   }
   buf[nbuf].addr = (ULong)a;
   buf[nbuf].size = (UInt)(size_kind & 0xFFFF);
   buf[nbuf].kind = (UInt)(size_kind >> 16);
   if (++nbuf == BUF_RECS)
      flush();
}

static void add_event(IRSB *sb, IRExpr *addr, Int size, Int kind, IRExpr *guard)
{
   IRExpr **argv = mkIRExprVec_2(addr, mkIRExpr_HWord((HWord)(size | (kind << 16))));
   IRDirty *di = unsafeIRDirty_0_N(2, "mt_ref", VG_(fnptr_to_fnentry)(mt_ref), argv);
   if (guard)
      di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static IRSB *mt_instrument(VgCallbackClosure *closure, IRSB *sbIn, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   IRTypeEnv *tyenv = sbIn->tyenv;
   IRSB *sbOut;
   Int i;
   if (gWordTy != hWordTy)
      VG_(tool_panic)("mmtrace: host/guest word size mismatch");
   sbOut = deepCopyIRSBExceptStmts(sbIn);
   for (i = 0; i < sbIn->stmts_used; i++) {
      IRStmt *st = sbIn->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_WrTmp: {
         IRExpr *data = st->Ist.WrTmp.data;
         if (data->tag == Iex_Load)
            add_event(sbOut, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty), 0, NULL);
         break;
      }
      case Ist_Store: {
         IRType ty = typeOfIRExpr(tyenv, st->Ist.Store.data);
         add_event(sbOut, st->Ist.Store.addr, sizeofIRType(ty), 1, NULL);
         break;
      }
      case Ist_StoreG: {
         IRStoreG *sg = st->Ist.StoreG.details;
         IRType ty = typeOfIRExpr(tyenv, sg->data);
         add_event(sbOut, sg->addr, sizeofIRType(ty), 1, sg->guard);
         break;
      }
      case Ist_LoadG: {
         IRLoadG *lg = st->Ist.LoadG.details;
         IRType ty = Ity_INVALID, ty_wide = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &ty_wide, &ty);
         add_event(sbOut, lg->addr, sizeofIRType(ty), 0, lg->guard);
         break;
      }
      case Ist_Dirty: {
         IRDirty *d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_event(sbOut, d->mAddr, d->mSize, 0, NULL);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_event(sbOut, d->mAddr, d->mSize, 1, NULL);
         }
         break;
      }
      case Ist_CAS: {
         IRCAS *cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL)
            size *= 2;
         add_event(sbOut, cas->addr, size, 0, NULL);
         add_event(sbOut, cas->addr, size, 1, NULL);
         break;
      }
      case Ist_LLSC: {
         if (st->Ist.LLSC.storedata == NULL) {
            IRType ty = typeOfIRTemp(tyenv, st->Ist.LLSC.result);
            add_event(sbOut, st->Ist.LLSC.addr, sizeofIRType(ty), 0, NULL);
         } else {
            IRType ty = typeOfIRExpr(tyenv, st->Ist.LLSC.storedata);
            add_event(sbOut, st->Ist.LLSC.addr, sizeofIRType(ty), 1, NULL);
         }
         break;
      }
      default:
         break;
      }
      addStmtToIRSB(sbOut, st);
   }
   return sbOut;
}

static Bool mt_option(const HChar *arg)
{
   if VG_INT_CLO(arg, "--out-fd", out_fd) {
   } else if VG_INT_CLO(arg, "--sample-on", sample_on) {
   } else if VG_INT_CLO(arg, "--sample-period", sample_period) {
   } else
      return False;
   return True;
}

static void mt_usage(void)
{
   VG_(printf)("    --out-fd=N              write the binary records to descriptor N (required)\n"
               "    --sample-on=N --sample-period=P  record the first N references of every P\n");
}

static void mt_debug_usage(void) {}

/* A writable mapping the program made (VG_TRACK new_mem_mmap: mmap, and mremap's new
   range): an allocation record. Read-only and executable mappings (code, read-only data)
   are no allocation. */
static void mt_new_mmap(Addr a, SizeT len, Bool rr, Bool ww, Bool xx, ULong di_handle)
{
   ULong pages = ((ULong)len + 0xFFF) >> 12;
   if (!ww || pages == 0)
      return;
   buf[nbuf].addr = (ULong)a;
   buf[nbuf].size = pages > 0xFFFFFFFFULL ? 0xFFFFFFFFu : (UInt)pages;
   buf[nbuf].kind = 4;
   if (++nbuf == BUF_RECS)
      flush();
}

static void mt_post_clo_init(void)
{
   if (out_fd < 0)
      VG_(fmsg_bad_option)("--out-fd", "mmtrace needs --out-fd=N\n");
   if (sample_period != 0 && (sample_on <= 0 || sample_on > sample_period))
      VG_(fmsg_bad_option)("--sample-on", "needs 0 < --sample-on <= --sample-period\n");
   if (sample_period == 0)
      recording = True;
   VG_(atfork)(NULL, mt_atfork_parent, mt_atfork_child);
}

static void mt_fini(Int exitcode)
{
   flush();
   if (forks > 0) {
      buf[0].addr = forks;
      buf[0].size = 0xFFFFFFFEu;
      buf[0].kind = 0xFFFFFFFFu;
      nbuf = 1;
      flush();
   }
   buf[0].addr = total;
   buf[0].size = 0xFFFFFFFFu;
   buf[0].kind = 0xFFFFFFFFu;
   nbuf = 1;
   flush();
}

static void mt_pre_clo_init(void)
{
   VG_(details_name)("mmtrace");
   VG_(details_version)(NULL);
   VG_(details_description)("data reference recorder for mmulab");
   VG_(details_copyright_author)("mmulab, MIT OR Apache-2.0");
   VG_(details_bug_reports_to)("the mmulab project");
   VG_(details_avg_translation_sizeB)(200);
   VG_(basic_tool_funcs)(mt_post_clo_init, mt_instrument, mt_fini);
   VG_(needs_command_line_options)(mt_option, mt_usage, mt_debug_usage);
   VG_(track_new_mem_mmap)(mt_new_mmap);
}

VG_DETERMINE_INTERFACE_VERSION(mt_pre_clo_init)
