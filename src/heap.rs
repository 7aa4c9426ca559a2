//! The wasm heap: the crate's own allocator, in less code than a general-purpose one.
//!
//! Blocks are cut from one region of linear memory that `memory.grow` extends. Each block starts
//! with a word holding its size (a multiple of [`GRAN`]) and two flags: [`FREE`], and [`PREV_FREE`]
//! (the block just before it is free). A free block also holds the links of its bin's list (the
//! second and third words) and its size again in its last word, so the block after it can find
//! its start. Payloads are aligned to [`GRAN`] (16 bytes on wasm32, what its most aligned types
//! need): a block starts one word before a multiple of it.
//!
//! - **Free blocks are merged** with free neighbours as they are freed, and a free block that ends
//!   where the untouched region begins goes back to it: no two free blocks are ever neighbours,
//!   and the untouched region never follows a free block.
//! - **Bins by size**: two per power of two (`[2^k, 1.5 * 2^k)` and `[1.5 * 2^k, 2^(k+1))`), each a
//!   list, with a bit per bin that holds any. A request takes the first block of its own bin when
//!   that one is large enough, else the first block of the next bin that holds any (all of
//!   which are), else it is cut from the untouched region. What a block has beyond the request
//!   is split off as a free block when it is at least [`GRAN`].
//! - **realloc** shrinks in place (the rest is freed), grows in place a block that ends where the
//!   untouched region begins, and otherwise moves.
//!
//! Natively the same code runs on an arena, for the tests (`tests` below).

use core::mem::size_of;

/// A machine word: the size word, the links, the size again at a free block's end.
const W: usize = size_of::<usize>();
/// Block sizes are multiples of this, and payloads aligned to it: four words (a free block's
/// size word, two links and its size again at its end).
pub(crate) const GRAN: usize = 4 * W;
/// The block is free (in a bin).
const FREE: usize = 1;
/// The block before this one is free (its size is in the word before this one).
const PREV_FREE: usize = 2;
const FLAGS: usize = FREE | PREV_FREE;
/// The number of bins (one bit each in `Heap::mask`); sizes beyond the last bin's start go to the
/// last bin.
const BINS: usize = 64;

/// Adds `pages` pages of 64 KiB to linear memory: the address where they start, or `None`. Never
/// past 65,535 pages: at 4 GiB the end of the heap's memory would not fit in a `usize`.
#[cfg(target_arch = "wasm32")]
fn grow(pages: usize) -> Option<usize> {
    use core::arch::wasm32::{memory_grow, memory_size};
    if memory_size(0) + pages > 0xffff {
        return None;
    }
    let old = memory_grow(0, pages);
    (old != usize::MAX).then_some(old << 16)
}

#[cfg(not(target_arch = "wasm32"))]
use tests::grow;

pub(crate) struct Heap {
    /// The first address of the untouched region (where a block would start).
    top: usize,
    /// The end of the memory the heap holds.
    end: usize,
    /// Bit `i` set iff `bins[i]` is not empty.
    mask: u64,
    /// The first block of each bin's list (0: none).
    bins: [usize; BINS],
}

/// The word at `at`.
///
/// # Safety
/// `at` is a word-aligned address of the heap's memory.
unsafe fn word(at: usize) -> *mut usize {
    at as *mut usize
}

/// The bin of a block of `n` bytes (`n` a multiple of `GRAN`, at least `GRAN`).
fn bin(n: usize) -> usize {
    let k = (usize::BITS - 1 - n.leading_zeros()) as usize;
    let half = (n >> (k - 1)) & 1;
    (2 * (k - GRAN.trailing_zeros() as usize) + half).min(BINS - 1)
}

impl Heap {
    pub(crate) const fn new() -> Heap {
        Heap {
            top: 0,
            end: 0,
            mask: 0,
            bins: [0; BINS],
        }
    }

    /// Puts free block `b` (its size word written) in its bin.
    unsafe fn link(&mut self, b: usize) {
        let i = bin(*word(b) & !FLAGS);
        // `bin` is below BINS: never `None`.
        let Some(slot) = self.bins.get_mut(i) else {
            return;
        };
        let head = core::mem::replace(slot, b);
        *word(b + W) = head;
        *word(b + 2 * W) = 0;
        if head != 0 {
            *word(head + 2 * W) = b;
        }
        self.mask |= 1 << i;
    }

    /// Takes free block `b` out of its bin.
    unsafe fn unlink(&mut self, b: usize) {
        let (next, prev) = (*word(b + W), *word(b + 2 * W));
        if next != 0 {
            *word(next + 2 * W) = prev;
        }
        if prev != 0 {
            *word(prev + W) = next;
        } else {
            let i = bin(*word(b) & !FLAGS);
            if let Some(slot) = self.bins.get_mut(i) {
                *slot = next;
            }
            if next == 0 {
                self.mask &= !(1 << i);
            }
        }
    }

    /// Makes the untouched region at least `n` bytes long; false when memory cannot grow.
    unsafe fn reserve(&mut self, n: usize) -> bool {
        if self.end - self.top < n {
            // Enough for `n` whether or not the new pages follow the heap's (up to a page more
            // than needed when they do).
            let pages = (n + GRAN + 0xffff) >> 16;
            let Some(at) = grow(pages) else {
                return false;
            };
            if at != self.end {
                // Not after the heap's memory (the first growth): the region starts there.
                self.top = at + GRAN - W;
            }
            self.end = at + (pages << 16);
        }
        true
    }

    /// A block for `size` bytes aligned to `align`: the payload's address, or null.
    ///
    /// # Safety
    /// Nothing else uses the memory the heap grows.
    pub(crate) unsafe fn alloc(&mut self, size: usize, align: usize) -> *mut u8 {
        // `size + W + GRAN` cannot overflow: a `Layout`'s size is at most `isize::MAX`.
        if align > GRAN {
            return core::ptr::null_mut();
        }
        let n = (size + W + GRAN - 1) & !(GRAN - 1);
        let i = bin(n);
        let mut b = self.bins.get(i).copied().unwrap_or(0);
        if b == 0 || *word(b) < n {
            // The first bin above that holds any (none: 64, no such bin).
            let above = (self.mask & (!1 << i)).trailing_zeros();
            b = self.bins.get(above as usize).copied().unwrap_or(0);
        }
        if b == 0 {
            if !self.reserve(n) {
                return core::ptr::null_mut();
            }
            b = self.top;
            self.top += n;
            *word(b) = n;
        } else {
            self.unlink(b);
            // A free block's neighbours are in use: no flag but its own.
            let s = *word(b) & !FLAGS;
            *word(b) = n;
            self.cut(b + n, s - n);
        }
        (b + W) as *mut u8
    }

    /// The `rest` bytes at `at`, after a block now in use, that were part of it: freed as a
    /// block of their own if there are any, else the next block learns that its neighbour is in
    /// use.
    unsafe fn cut(&mut self, at: usize, rest: usize) {
        if rest != 0 {
            *word(at) = rest;
            self.free(at);
        } else if at != self.top {
            *word(at) &= !PREV_FREE;
        }
    }

    /// Frees the block at `b` (its size word as it is in use).
    unsafe fn free(&mut self, mut b: usize) {
        let h = *word(b);
        let mut s = h & !FLAGS;
        let next = b + s;
        if h & PREV_FREE != 0 {
            let before = *word(b - W);
            b -= before;
            s += before;
            self.unlink(b);
        }
        if next == self.top {
            self.top = b;
            return;
        }
        let nh = *word(next);
        if nh & FREE != 0 {
            self.unlink(next);
            s += nh & !FLAGS;
        } else {
            *word(next) = nh | PREV_FREE;
        }
        *word(b) = s | FREE;
        *word(b + s - W) = s;
        self.link(b);
    }

    /// Frees the block whose payload is at `p`.
    ///
    /// # Safety
    /// `p` came from this heap's `alloc` or `realloc`, and is not freed yet.
    pub(crate) unsafe fn dealloc(&mut self, p: *mut u8) {
        self.free(p as usize - W);
    }

    /// The block whose payload is at `p`, resized to `size` bytes: the payload's address (the
    /// same or a new one, with the contents moved), or null (the block is left as it was).
    ///
    /// # Safety
    /// As for [`dealloc`](Self::dealloc); `align` is the block's alignment.
    pub(crate) unsafe fn realloc(&mut self, p: *mut u8, align: usize, size: usize) -> *mut u8 {
        let b = p as usize - W;
        let h = *word(b);
        let s = h & !FLAGS;
        let n = (size + W + GRAN - 1) & !(GRAN - 1);
        if n <= s {
            *word(b) = n | (h & PREV_FREE);
            self.cut(b + n, s - n);
            return p;
        }
        let top = self.top;
        if b + s == top && self.reserve(n - s) && self.top == top {
            *word(b) = n | (h & PREV_FREE);
            self.top = b + n;
            return p;
        }
        let q = self.alloc(size, align);
        if !q.is_null() {
            core::ptr::copy_nonoverlapping(p, q, s - W);
            self.free(b);
        }
        q
    }
}

#[cfg(target_arch = "wasm32")]
mod global {
    use super::Heap;
    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::UnsafeCell;

    /// wasm32 runs one thread (this crate is built without `atomics`), so the heap is never
    /// used from two places at once.
    pub(crate) struct Global(UnsafeCell<Heap>);

    #[cfg(target_feature = "atomics")]
    compile_error!("the heap is for one thread: build without the `atomics` target feature");

    // SAFETY: one thread (see above).
    unsafe impl Sync for Global {}

    #[global_allocator]
    static HEAP: Global = Global(UnsafeCell::new(Heap::new()));

    // SAFETY: the heap hands out blocks of at least the size asked for, aligned as asked (or
    // null for an alignment above 16, which no type of this crate has), each once until freed.
    unsafe impl GlobalAlloc for Global {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            (*self.0.get()).alloc(layout.size(), layout.align())
        }

        unsafe fn dealloc(&self, p: *mut u8, _: Layout) {
            (*self.0.get()).dealloc(p)
        }

        unsafe fn realloc(&self, p: *mut u8, layout: Layout, size: usize) -> *mut u8 {
            (*self.0.get()).realloc(p, layout.align(), size)
        }
    }
}

/// Natively, on an arena (on wasm32 the heap is the test binary's own allocator).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::vec::Vec;

    const ARENA: usize = 64 << 20;

    std::thread_local! {
        /// This thread's arena: its base (64 KiB aligned) and the bytes handed out so far.
        static MEM: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    }

    pub(super) fn grow(pages: usize) -> Option<usize> {
        MEM.with(|m| {
            let (mut base, used) = m.get();
            if base == 0 {
                let layout = std::alloc::Layout::from_size_align(ARENA, 1 << 16).ok()?;
                // SAFETY: a layout of non-zero size; never freed (one per test thread).
                base = unsafe { std::alloc::alloc(layout) } as usize;
            }
            let bytes = pages << 16;
            if used + bytes > ARENA {
                return None;
            }
            m.set((base, used + bytes));
            Some(base + used)
        })
    }

    fn arena() -> (usize, usize) {
        MEM.with(Cell::get)
    }

    /// Walks every block from the heap's start to `top` and checks the layout's rules; returns
    /// the blocks in use as (payload, size).
    fn check(h: &Heap) -> Vec<(usize, usize)> {
        let (base, _) = arena();
        let mut used = Vec::new();
        let mut free = Vec::new();
        let mut b = base + GRAN - W;
        let mut prev_free = false;
        while b < h.top {
            let w = unsafe { *word(b) };
            let s = w & !FLAGS;
            assert!(s >= GRAN && s % GRAN == 0, "block {b:#x}: size {s}");
            assert_eq!(w & PREV_FREE != 0, prev_free, "block {b:#x}: PREV_FREE");
            let is_free = w & FREE != 0;
            assert!(!(is_free && prev_free), "two free neighbours at {b:#x}");
            if is_free {
                assert_eq!(unsafe { *word(b + s - W) }, s, "footer of {b:#x}");
                free.push(b);
            } else {
                used.push((b + W, s));
            }
            prev_free = is_free;
            b += s;
        }
        assert_eq!(b, h.top, "the blocks end at top");
        assert!(!prev_free, "a free block before top");
        assert!(h.top <= h.end);
        let mut listed = Vec::new();
        for (i, &head) in h.bins.iter().enumerate() {
            assert_eq!(h.mask >> i & 1 == 1, head != 0, "mask bit {i}");
            let (mut at, mut prev) = (head, 0);
            while at != 0 {
                assert_eq!(unsafe { *word(at + 2 * W) }, prev, "back link of {at:#x}");
                assert_eq!(bin(unsafe { *word(at) } & !FLAGS), i, "bin of {at:#x}");
                listed.push(at);
                prev = at;
                at = unsafe { *word(at + W) };
            }
        }
        listed.sort_unstable();
        assert_eq!(listed, free, "the bins list the free blocks");
        used
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> usize {
            (self.next() % n) as usize
        }
    }

    fn fill(p: *mut u8, len: usize, tag: u8) {
        // SAFETY: `p` is a live block of at least `len` bytes.
        unsafe { core::ptr::write_bytes(p, tag, len) };
    }

    fn holds(p: *mut u8, len: usize, tag: u8) -> bool {
        // SAFETY: as in `fill`.
        unsafe { core::slice::from_raw_parts(p, len) }
            .iter()
            .all(|&b| b == tag)
    }

    #[test]
    fn bins_are_ordered_by_size() {
        let mut last = 0;
        for n in (GRAN..1 << 22).step_by(GRAN) {
            let i = bin(n);
            assert!(i >= last && i < BINS, "{n}");
            last = i;
        }
        assert_eq!(bin(GRAN), 0);
        // Two bins per power of two: [2^k, 1.5 * 2^k) and [1.5 * 2^k, 2^(k+1)).
        let bins: Vec<_> = (2..=8).map(|m| bin(m * GRAN)).collect();
        assert_eq!(bins, [2, 3, 4, 4, 5, 5, 6]);
        // The largest size has a bin (the last one on 64-bit targets, where sizes go past it).
        assert!(bin(usize::MAX & !(GRAN - 1)) < BINS);
    }

    #[test]
    fn random_allocations_keep_the_layout_and_the_contents() {
        for seed in 1..=6u64 {
            MEM.with(|m| m.set((m.get().0, 0)));
            let mut h = Heap::new();
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            // (payload, size asked, fill byte)
            let mut live: Vec<(*mut u8, usize, u8)> = Vec::new();
            for step in 0..20_000 {
                let op = rng.below(10);
                if op < 5 || live.is_empty() {
                    let size = match rng.below(20) {
                        0 => rng.below(300_000),
                        1..=4 => rng.below(4_000),
                        _ => rng.below(100) + 1,
                    };
                    let align = 1 << rng.below(5);
                    let p = unsafe { h.alloc(size, align) };
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0);
                    let tag = (step % 251) as u8;
                    fill(p, size, tag);
                    live.push((p, size, tag));
                } else if op < 8 {
                    let (p, size, tag) = live.swap_remove(rng.below(live.len() as u64));
                    assert!(holds(p, size, tag), "seed {seed} step {step}: contents");
                    unsafe { h.dealloc(p) };
                } else {
                    let i = rng.below(live.len() as u64);
                    let (p, size, tag) = live[i];
                    let new = match rng.below(3) {
                        0 => size / 2,
                        1 => size + rng.below(64),
                        _ => (size * 2 + 1).min(1 << 20),
                    };
                    let q = unsafe { h.realloc(p, 8, new) };
                    assert!(!q.is_null());
                    assert!(
                        holds(q, size.min(new), tag),
                        "seed {seed} step {step}: moved"
                    );
                    let tag = tag.wrapping_add(1);
                    fill(q, new, tag);
                    live[i] = (q, new, tag);
                }
                if step % 97 == 0 {
                    let used = check(&h);
                    assert_eq!(used.len(), live.len());
                    let mut blocks: Vec<_> =
                        live.iter().map(|&(p, s, _)| (p as usize, s)).collect();
                    blocks.sort_unstable();
                    for ((p, asked), (q, size)) in blocks.iter().zip(&used) {
                        assert_eq!(p, q, "the live blocks are the used ones");
                        assert!(asked + W <= *size, "block {p:#x} holds its payload");
                    }
                }
            }
            for (p, size, tag) in live.drain(..) {
                assert!(holds(p, size, tag));
                unsafe { h.dealloc(p) };
            }
            check(&h);
            let (base, _) = arena();
            assert_eq!(h.top, base + GRAN - W, "all freed: back to an empty heap");
            assert_eq!(h.mask, 0);
        }
    }

    #[test]
    fn freed_memory_is_used_again() {
        MEM.with(|m| m.set((m.get().0, 0)));
        let mut h = Heap::new();
        // A long-lived block at the end keeps the freed ones from going back to the top.
        let mut blocks: Vec<_> = (0..1000).map(|_| unsafe { h.alloc(1000, 8) }).collect();
        let keep = unsafe { h.alloc(10, 8) };
        let grown = arena().1;
        for p in blocks.drain(..) {
            unsafe { h.dealloc(p) };
        }
        check(&h);
        // Merged into one block: a request as large as all of them fits without growing.
        let big = unsafe { h.alloc(990_000, 8) };
        assert!(!big.is_null());
        assert_eq!(arena().1, grown, "no new memory");
        unsafe {
            h.dealloc(big);
            h.dealloc(keep);
        }
        check(&h);
    }

    #[test]
    fn realloc_grows_the_last_block_in_place_and_shrinks_any() {
        MEM.with(|m| m.set((m.get().0, 0)));
        let mut h = Heap::new();
        let a = unsafe { h.alloc(100, 8) };
        let b = unsafe { h.alloc(100, 8) };
        fill(b, 100, 7);
        let b2 = unsafe { h.realloc(b, 8, 200_000) };
        assert_eq!(b2, b, "the last block grows in place");
        assert!(holds(b2, 100, 7));
        let a2 = unsafe { h.realloc(a, 8, 40) };
        assert_eq!(a2, a, "shrunk in place");
        check(&h);
        let a3 = unsafe { h.realloc(a2, 8, 5_000) };
        assert_ne!(a3, a2, "moved: a block follows it");
        check(&h);
        assert!(
            unsafe { h.alloc(ARENA, 8) }.is_null(),
            "more than the arena: null"
        );
        assert!(
            unsafe { h.alloc(8, 64) }.is_null(),
            "an alignment above GRAN: null"
        );
        check(&h);
    }
}
