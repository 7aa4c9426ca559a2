//! The wasm module's allocator: size classes of powers of two, a free list per class, and a bump
//! region at the end of memory that `memory.grow` extends.
//!
//! A block of class `k` is `2^k` bytes (16 B at least) and aligned to its size up to 64 KiB (a
//! page), so any block of a class serves any layout of that class: the class is that of the
//! size or the alignment, whichever is larger. A freed block goes to the front of its class's
//! list (its first word holds the next one), and is taken again only by that class: blocks are
//! never split or merged, so what a class holds is at most the most that class ever had live at
//! once, and the rounding to a power of two costs at most half of a block. This is all the
//! crate's allocations need: the largest are a few, of known size (a byte input's 1 MiB window,
//! a whole document copied for its exact error), and the rest are small and come back in the
//! same sizes turn after turn. In code it is a few hundred bytes where a general-purpose
//! allocator (one that splits and merges) is about 2 KB.
//!
//! The bump region only ever grows at the end of memory, where `grow` adds pages: a block too
//! large for what is left of it takes new pages right after it, so nothing is left behind. When
//! bumping to a block's alignment skips bytes, they go to the free lists as blocks of the sizes
//! that fill the gap.

/// The smallest class: 16 B (`2^4`), so that every block is aligned to 16 and holds a pointer.
const MIN: u32 = 4;
/// The page of `memory.grow`, and the largest alignment a block is bumped to.
pub(crate) const PAGE: usize = 1 << 16;

/// The allocator's state: the bump region and the free lists.
pub(crate) struct Heap {
    /// The next free byte of the bump region, and its end (the end of memory it was given).
    next: usize,
    end: usize,
    /// The first free block of each class (0: none).
    free: [usize; usize::BITS as usize],
}

/// The class of a layout: the `k` of the smallest block (`2^k` bytes, `k >= MIN`) that holds
/// `size` bytes aligned to `align`; `None` when there is none (over half the address space).
fn class(size: usize, align: usize) -> Option<usize> {
    let k = usize::BITS - (size.max(align).max(1 << MIN) - 1).leading_zeros();
    (k < usize::BITS).then_some(k as usize)
}

impl Heap {
    pub(crate) const fn new() -> Self {
        Heap {
            next: 0,
            end: 0,
            free: [0; usize::BITS as usize],
        }
    }

    /// Puts the block at `at` of class `k` on its free list.
    ///
    /// # Safety
    /// `at` is a block of class `k` that nothing uses.
    unsafe fn push(&mut self, at: usize, k: usize) {
        if let Some(head) = self.free.get_mut(k) {
            *(at as *mut usize) = *head;
            *head = at;
        }
    }

    /// The address of a new block for `size` bytes aligned to `align` (0 when there is none),
    /// from its class's free list or else the bump region. `grow(pages)` adds `pages` pages of
    /// 64 KiB to memory and returns the address where they start (`None` when it cannot).
    ///
    /// # Safety
    /// `grow` returns memory that is the allocator's alone, and the free lists hold only blocks
    /// freed with [`Heap::dealloc`].
    pub(crate) unsafe fn alloc(
        &mut self,
        size: usize,
        align: usize,
        grow: impl FnOnce(usize) -> Option<usize>,
    ) -> usize {
        let Some(k) = class(size, align) else {
            return 0;
        };
        if let Some(head) = self.free.get_mut(k) {
            let at = *head;
            if at != 0 {
                *head = *(at as *const usize);
                return at;
            }
        }
        let block = 1usize << k;
        let a = block.min(PAGE);
        // Up to the block's alignment (within the region, whose end is a page boundary), the
        // bytes skipped as free blocks: each the largest the address is aligned to.
        while self.next & (a - 1) != 0 {
            let gap = self.next & self.next.wrapping_neg();
            self.push(self.next, gap.trailing_zeros() as usize);
            self.next += gap;
        }
        if self.end - self.next < block {
            let pages = (block - (self.end - self.next)).div_ceil(PAGE);
            let Some(start) = grow(pages) else {
                return 0;
            };
            // Pages that do not follow the region (memory grown by someone else, or the first
            // call) start a new region; what was left of the old one is not used again.
            if start != self.end {
                self.next = start;
            }
            let Some(end) = start.checked_add(pages * PAGE) else {
                return 0;
            };
            self.end = end;
            if self.end - self.next < block {
                return 0;
            }
        }
        let at = self.next;
        self.next += block;
        at
    }

    /// Frees the block at `at`, allocated for `size` bytes aligned to `align`.
    ///
    /// # Safety
    /// `at` was returned by [`Heap::alloc`] for the same class and is not used again.
    pub(crate) unsafe fn dealloc(&mut self, at: usize, size: usize, align: usize) {
        if let Some(k) = class(size, align) {
            self.push(at, k);
        }
    }

    /// Whether a block for `size` bytes aligned to `align` also holds `new` bytes: the same
    /// class (a smaller one is not kept in a larger block, which its list would then lose).
    pub(crate) fn fits(size: usize, align: usize, new: usize) -> bool {
        class(size, align) == class(new, align)
    }
}

/// The global allocator of the wasm module: a [`Heap`] grown with `memory.grow`.
#[cfg(target_arch = "wasm32")]
pub(crate) mod wasm {
    use super::{Heap, PAGE};
    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::UnsafeCell;

    pub(crate) struct Allocator(UnsafeCell<Heap>);

    // SAFETY: the module runs one thread (wasm32 without the `atomics` feature, checked below),
    // and no allocation happens inside another.
    unsafe impl Sync for Allocator {}

    #[cfg(target_feature = "atomics")]
    compile_error!("the allocator of src/heap.rs is for single-threaded wasm only");

    impl Allocator {
        pub(crate) const fn new() -> Self {
            Allocator(UnsafeCell::new(Heap::new()))
        }
    }

    fn grow(pages: usize) -> Option<usize> {
        let old = core::arch::wasm32::memory_grow(0, pages);
        (old != usize::MAX).then(|| old * PAGE)
    }

    unsafe impl GlobalAlloc for Allocator {
        unsafe fn alloc(&self, l: Layout) -> *mut u8 {
            (*self.0.get()).alloc(l.size(), l.align(), grow) as *mut u8
        }

        unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
            (*self.0.get()).dealloc(p as usize, l.size(), l.align());
        }

        unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
            if Heap::fits(l.size(), l.align(), new) {
                return p;
            }
            let q = (*self.0.get()).alloc(new, l.align(), grow) as *mut u8;
            if !q.is_null() {
                core::ptr::copy_nonoverlapping(p, q, l.size().min(new));
                (*self.0.get()).dealloc(p as usize, l.size(), l.align());
            }
            q
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::vec::Vec;

    /// An arena of `pages` pages, handed out to the heap as `memory.grow` would, from a start
    /// aligned to 64 KiB; `grown` counts what was handed out.
    struct Arena {
        base: usize,
        pages: usize,
        grown: usize,
        _mem: Vec<u8>,
    }

    impl Arena {
        fn new(pages: usize) -> Self {
            let mem = vec![0u8; (pages + 1) * PAGE];
            let base = (mem.as_ptr() as usize).next_multiple_of(PAGE);
            Arena {
                base,
                pages,
                grown: 0,
                _mem: mem,
            }
        }
        fn grow(&mut self, pages: usize) -> Option<usize> {
            (self.grown + pages <= self.pages).then(|| {
                self.grown += pages;
                self.base + (self.grown - pages) * PAGE
            })
        }
    }

    #[test]
    fn classes() {
        assert_eq!(class(1, 1), Some(4));
        assert_eq!(class(16, 8), Some(4));
        assert_eq!(class(17, 1), Some(5));
        assert_eq!(class(8, 32), Some(5));
        assert_eq!(class(1 << 20, 4), Some(20));
        assert_eq!(class((1 << 20) + 1, 4), Some(21));
        assert_eq!(class(usize::MAX / 2 + 1, 1), Some(usize::BITS as usize - 1));
        assert_eq!(class(usize::MAX / 2 + 2, 1), None);
        assert!(Heap::fits(20, 8, 32));
        assert!(!Heap::fits(20, 8, 33));
        assert!(!Heap::fits(40, 8, 16), "a smaller class moves");
    }

    /// Random allocations, frees and reallocations of sizes from 1 B to 2 MiB: every block is
    /// aligned, inside the memory grown, apart from every other live block, and keeps what was
    /// written to it; memory grows by no more than twice what each class had live at its most
    /// (the blocks a class holds, and the gaps that alignment skipped), plus a page per class.
    #[test]
    fn blocks_are_aligned_apart_and_kept() {
        let mut arena = Arena::new(4096);
        let mut heap = Heap::new();
        let mut live: BTreeMap<usize, (usize, usize, u8)> = BTreeMap::new();
        // Bytes live per class, now and at the most.
        let (mut now, mut most) = ([0usize; 64], [0usize; 64]);
        let mut add = |size: usize, align: usize, sign: bool| {
            let k = class(size, align).unwrap();
            if sign {
                now[k] += 1 << k;
                most[k] = most[k].max(now[k]);
            } else {
                now[k] -= 1 << k;
            }
        };
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let fill = |at: usize, size: usize, tag: u8| unsafe {
            core::ptr::write_bytes(at as *mut u8, tag, size);
        };
        let check = |at: usize, size: usize, tag: u8| unsafe {
            let s = core::slice::from_raw_parts(at as *const u8, size);
            assert!(s.iter().all(|&b| b == tag), "block at {at:#x} changed");
        };
        for step in 0..20_000u32 {
            let tag = (step % 251) as u8 + 1;
            if live.is_empty() || rand(100) < 50 {
                let size = match rand(100) {
                    0 => 1 + rand(2 << 20) as usize,
                    1..=9 => 1 + rand(64 << 10) as usize,
                    _ => 1 + rand(300) as usize,
                };
                let align = 1 << rand(7);
                let at = unsafe { heap.alloc(size, align, |p| arena.grow(p)) };
                assert_ne!(at, 0, "out of memory at step {step}");
                assert_eq!(at % align, 0);
                assert_eq!(at % 16, 0);
                assert!(at >= arena.base && at + size <= arena.base + arena.grown * PAGE);
                if let Some((&a, &(s, _, _))) = live.range(..=at).next_back() {
                    assert!(a + s <= at, "overlaps the block at {a:#x}");
                }
                if let Some((&a, _)) = live.range(at..).next() {
                    assert!(at + size <= a, "overlaps the block at {a:#x}");
                }
                fill(at, size, tag);
                live.insert(at, (size, align, tag));
                add(size, align, true);
            } else {
                let nth = rand(live.len() as u64) as usize;
                let (&at, &(size, align, old)) = live.iter().nth(nth).unwrap();
                check(at, size, old);
                live.remove(&at);
                add(size, align, false);
                if rand(3) == 0 {
                    // A reallocation, as the global allocator makes it.
                    let new = 1 + rand(2 * size as u64 + 64) as usize;
                    let to = if Heap::fits(size, align, new) {
                        at
                    } else {
                        let to = unsafe { heap.alloc(new, align, |p| arena.grow(p)) };
                        assert_ne!(to, 0);
                        unsafe {
                            core::ptr::copy_nonoverlapping(
                                at as *const u8,
                                to as *mut u8,
                                size.min(new),
                            );
                            heap.dealloc(at, size, align);
                        }
                        to
                    };
                    check(to, size.min(new), old);
                    fill(to, new, tag);
                    live.insert(to, (new, align, tag));
                    add(new, align, true);
                } else {
                    unsafe { heap.dealloc(at, size, align) };
                }
            }
        }
        for (&at, &(size, _, tag)) in &live {
            check(at, size, tag);
        }
        let bound = 2 * most.iter().sum::<usize>() + 64 * PAGE;
        assert!(
            arena.grown * PAGE <= bound,
            "grew {} pages, bound {}",
            arena.grown,
            bound / PAGE
        );
    }

    /// A freed block is used again by its class, and memory does not grow for a pattern that
    /// repeats (a turn's allocations, over and over).
    #[test]
    fn a_repeated_pattern_grows_memory_once() {
        let mut arena = Arena::new(64);
        let mut heap = Heap::new();
        let sizes = [24usize, 100, 7, 4096, 70_000, 33, 1 << 20, 20, 30, 90, 4000];
        let mut after_first = 0;
        for round in 0..50 {
            let blocks: Vec<_> = sizes
                .iter()
                .map(|&s| (unsafe { heap.alloc(s, 8, |p| arena.grow(p)) }, s))
                .collect();
            for &(at, s) in blocks.iter().rev() {
                assert_ne!(at, 0);
                unsafe { heap.dealloc(at, s, 8) };
            }
            if round == 0 {
                after_first = arena.grown;
            }
        }
        assert_eq!(arena.grown, after_first);
        // The most allocation there is is refused, not wrapped.
        assert_eq!(unsafe { heap.alloc(usize::MAX, 1, |p| arena.grow(p)) }, 0);
        assert_eq!(
            unsafe { heap.alloc(1 << 30, 1, |p| arena.grow(p)) },
            0,
            "beyond the arena"
        );
    }
}
