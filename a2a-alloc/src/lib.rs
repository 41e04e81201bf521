#![doc = include_str!("../README.md")]
//!
//! # Why not `MiMalloc`
//!
//! Why not `mimalloc::MiMalloc` as it is: it sends every allocation through
//! `mi_malloc_aligned`, and mimalloc (v2 and v3 alike) takes the fast path
//! there only for blocks of at most 1 KiB. Anything larger whose rounded
//! block size is not a power of two (a boxed future of 1.2 KiB, a 3 KiB
//! buffer) is over-allocated by the alignment and freed the slow way. On a
//! blocking SendMessage that was about 15 allocations and several thousand
//! instructions per request (`scripts/server-instructions.sh`), and memory
//! wasted besides. The fix is the one the C API intends: plain `mi_malloc`
//! when the alignment is one every mimalloc block already has.
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use libmimalloc_sys as ffi;

/// mimalloc as the global allocator; see the crate's documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mimalloc;

/// The alignment mimalloc gives every block whose size is a multiple of it
/// (`MI_MAX_ALIGN_SIZE`): block sizes are multiples of 8 (of 16 above 16
/// bytes) and a page's blocks start 16-aligned, so a block of a size that
/// is a multiple of such an alignment is aligned to it.
const NATURAL_ALIGN: usize = 16;

/// Whether plain `mi_malloc` of `size` bytes is aligned to `align`.
fn is_natural(size: usize, align: usize) -> bool {
    align <= NATURAL_ALIGN && size % align == 0
}

// SAFETY: every method hands mimalloc a layout it accepts (alignments are
// powers of two, as `Layout` guarantees), returns what mimalloc returns
// (null on failure, as `GlobalAlloc` requires), and frees only pointers
// mimalloc gave out; `mi_free` and `mi_realloc` accept blocks from both the
// plain and the aligned allocation functions.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        if is_natural(size, align) {
            // SAFETY: plain allocation; its alignment suffices (see `is_natural`).
            unsafe { ffi::mi_malloc(size).cast() }
        } else {
            // SAFETY: `align` is a power of two (a `Layout` invariant).
            unsafe { ffi::mi_malloc_aligned(size, align).cast() }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        if is_natural(size, align) {
            // SAFETY: as in `alloc`.
            unsafe { ffi::mi_zalloc(size).cast() }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { ffi::mi_zalloc_aligned(size, align).cast() }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block this allocator returned.
        unsafe { ffi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        if is_natural(new_size, align) {
            // SAFETY: `ptr` came from this allocator; the new block's
            // alignment suffices (see `is_natural`).
            unsafe { ffi::mi_realloc(ptr.cast::<c_void>(), new_size).cast() }
        } else {
            // SAFETY: `ptr` came from this allocator; `align` is a power of two.
            unsafe { ffi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, align).cast() }
        }
    }
}

/// A global allocator that counts the allocations made on the threads that
/// asked for it, and otherwise passes every call to `A` untouched: the
/// benchmarks' allocation counter (`a2a-bench allocs`).
///
/// Counting is off until [`start_counting`] is called, and then only the
/// threads that called [`count_this_thread`] are counted (a server's
/// runtime threads, say, and not the load generator beside it in the same
/// process). While it is off, each call pays one relaxed load of a flag that
/// is never written, so a program that installs it but never counts runs as
/// it would on `A`.
///
/// ```rust,no_run
/// #[global_allocator]
/// static ALLOCATOR: a2a_alloc::Counting<a2a_alloc::Mimalloc> =
///     a2a_alloc::Counting::new(a2a_alloc::Mimalloc);
///
/// fn main() {
///     a2a_alloc::start_counting();
///     a2a_alloc::count_this_thread();
///     let before = a2a_alloc::allocation_counts();
///     let boxed = std::hint::black_box(Box::new([0u8; 64]));
///     let after = a2a_alloc::allocation_counts();
///     assert_eq!(after.allocations - before.allocations, 1);
///     drop(boxed);
/// }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Counting<A> {
    inner: A,
}

impl<A> Counting<A> {
    /// `inner`, counted.
    pub const fn new(inner: A) -> Self {
        Self { inner }
    }
}

/// What a [`Counting`] allocator has counted so far, on the counted threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocationCounts {
    /// New blocks (`alloc` and `alloc_zeroed`).
    pub allocations: u64,
    /// Blocks resized (`realloc`): a vector or string that grew.
    pub reallocations: u64,
}

/// Whether any counting is on: the one flag every allocation reads first.
static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static REALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialized and without a destructor, so reading it allocates
    // nothing and is allowed inside the allocator, at any point of the
    // thread's life.
    static COUNTED_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Turns counting on for the threads that asked (see [`count_this_thread`]).
pub fn start_counting() {
    COUNTING.store(true, Ordering::Relaxed);
}

/// Counts this thread's allocations from now on (once [`start_counting`]
/// has been called), for as long as the thread lives.
pub fn count_this_thread() {
    COUNTED_THREAD.with(|counted| counted.set(true));
}

/// The counts so far, over every counted thread. Take two and subtract.
pub fn allocation_counts() -> AllocationCounts {
    AllocationCounts {
        allocations: ALLOCATIONS.load(Ordering::Relaxed),
        reallocations: REALLOCATIONS.load(Ordering::Relaxed),
    }
}

#[inline]
fn counted(counter: &AtomicU64) {
    if COUNTING.load(Ordering::Relaxed) && COUNTED_THREAD.with(Cell::get) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method passes its arguments to `A`'s, unchanged, and
// returns what it returns; the counting touches only atomics and a
// const-initialized thread-local, neither of which allocates.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(&ALLOCATIONS);
        // SAFETY: the caller's contract is `A::alloc`'s.
        unsafe { self.inner.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted(&ALLOCATIONS);
        // SAFETY: the caller's contract is `A::alloc_zeroed`'s.
        unsafe { self.inner.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `A::dealloc`'s.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted(&REALLOCATIONS);
        // SAFETY: the caller's contract is `A::realloc`'s.
        unsafe { self.inner.realloc(ptr, layout, new_size) }
    }
}

/// The environment variable that is mimalloc's own switch for transparent
/// huge pages: when it is set, its value decides and this crate stays out.
pub const ALLOW_THP_VARIABLE: &str = "MIMALLOC_ALLOW_THP";

/// Turns transparent huge pages off for this process (Linux only; elsewhere
/// it does nothing), unless [`ALLOW_THP_VARIABLE`] is set. Returns whether
/// this call turned them off (`false` when the variable decides, or off
/// Linux).
///
/// Why a server wants this: mimalloc asks the kernel for huge pages on its
/// arenas, so each new 2 MiB of a growing heap arrives in one page fault
/// that zeroes all of it while the thread that touched it waits. Under load
/// that thread is the runtime's worker, and every request it holds waits
/// too. On the benchmark host those faults took 5 to 7 ms each and came
/// every few dozen milliseconds while the in-memory store grew; turning them
/// off moved p99 at 64 connections from 5.9 to 3.5-3.7 ms in alternating
/// same-run pairs, for about 2% of throughput (the TLB misses of small
/// pages). With 4 KiB pages the same zeroing is spread thinly over the
/// requests that first touch the memory.
///
/// The switch (`PR_SET_THP_DISABLE`) is checked by the kernel at each fault,
/// so memory mapped before the call is covered too; call it early anyway,
/// before the heap has grown. Child processes inherit it, across `exec` too:
/// the programs a gateway starts as process agents run without huge pages
/// as well, unless [`ALLOW_THP_VARIABLE`] is set.
///
/// # Errors
///
/// The kernel's refusal (a kernel older than 3.15, or a sandbox that filters
/// `prctl`). The process then runs as before, tail included.
pub fn disable_transparent_huge_pages() -> std::io::Result<bool> {
    if std::env::var_os(ALLOW_THP_VARIABLE).is_some() {
        return Ok(false);
    }
    disable_thp_for_process()
}

#[cfg(target_os = "linux")]
fn disable_thp_for_process() -> std::io::Result<bool> {
    // The variadic arguments as the kernel reads them: unsigned longs.
    let (on, unused): (libc::c_ulong, libc::c_ulong) = (1, 0);
    // SAFETY: `PR_SET_THP_DISABLE` takes a flag and three zeros and touches
    // no memory of the caller.
    let answer = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, on, unused, unused, unused) };
    if answer == 0 {
        Ok(true)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn disable_thp_for_process() -> std::io::Result<bool> {
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel reports the switch as set afterwards (a flag of the
    /// process: this test's own process keeps it, which harms nothing).
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_are_off_after_the_call() {
        if std::env::var_os(ALLOW_THP_VARIABLE).is_some() {
            return;
        }
        assert!(disable_transparent_huge_pages().expect("prctl"));
        let unused: libc::c_ulong = 0;
        // SAFETY: `PR_GET_THP_DISABLE` takes four zeros and reads only the
        // process's flag.
        let state =
            unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, unused, unused, unused, unused) };
        assert_eq!(state, 1);
    }

    /// Every size from 1 byte to past the large-block threshold, at every
    /// alignment up to a page: aligned as asked, writable, reallocated
    /// with its contents kept.
    #[test]
    fn blocks_are_aligned_and_keep_their_contents() {
        let allocator = Mimalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
            let mut size = 1;
            while size < 600_000 {
                let layout = Layout::from_size_align(size, align).expect("valid layout");
                // SAFETY: a non-zero size; the block is freed below with the same layout.
                let block = unsafe { allocator.alloc(layout) };
                assert!(!block.is_null());
                assert_eq!(block as usize % align, 0, "size {size} align {align}");
                // SAFETY: `block` holds `size` bytes.
                unsafe { block.write_bytes(0xA5, size) };
                let grown = size * 3 + 5;
                // SAFETY: `block` came from `alloc` with `layout`.
                let moved = unsafe { allocator.realloc(block, layout, grown) };
                assert!(!moved.is_null());
                assert_eq!(moved as usize % align, 0, "grown {grown} align {align}");
                // SAFETY: the first `size` bytes were copied over.
                let kept = unsafe { std::slice::from_raw_parts(moved, size) };
                assert!(kept.iter().all(|&b| b == 0xA5));
                let grown_layout = Layout::from_size_align(grown, align).expect("valid layout");
                // SAFETY: `moved` is the live block of `grown_layout`.
                unsafe { allocator.dealloc(moved, grown_layout) };

                // SAFETY: as above.
                let zeroed = unsafe { allocator.alloc_zeroed(layout) };
                assert_eq!(zeroed as usize % align, 0);
                // SAFETY: `zeroed` holds `size` bytes.
                let bytes = unsafe { std::slice::from_raw_parts(zeroed, size) };
                assert!(bytes.iter().all(|&b| b == 0));
                // SAFETY: `zeroed` is the live block of `layout`.
                unsafe { allocator.dealloc(zeroed, layout) };
                size = size * 5 / 4 + 1;
            }
        }
    }

    /// Only the threads that asked are counted, each block once; a
    /// reallocation is counted apart.
    #[test]
    fn counts_only_the_counted_threads() {
        let allocator = Counting::new(Mimalloc);
        let layout = Layout::from_size_align(48, 8).expect("valid layout");
        let alloc_and_free = || {
            // SAFETY: a non-zero size; freed with the layout it grew to.
            unsafe {
                let block = allocator.alloc(layout);
                let grown = allocator.realloc(block, layout, 96);
                allocator.dealloc(grown, Layout::from_size_align(96, 8).expect("valid"));
            }
        };
        start_counting();
        // Not counted yet: this thread has not asked.
        let before = allocation_counts();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                count_this_thread();
                alloc_and_free();
                alloc_and_free();
            });
        });
        alloc_and_free();
        let after = allocation_counts();
        // Other tests' threads are not counted, so the difference is exact.
        assert_eq!(after.allocations - before.allocations, 2);
        assert_eq!(after.reallocations - before.reallocations, 2);
    }
}
