//! The allocator of the `mcp-gateway` binary: mimalloc, asked for plain blocks where a plain
//! block is aligned enough.
//!
//! `mimalloc::MiMalloc` passes every request to `mi_malloc_aligned`. In mimalloc 3 that takes its
//! fast path only for blocks of at most 1 KiB; a larger one of an alignment mimalloc gives anyway
//! (a boxed future, a read buffer) goes through its over-allocating path, about 200 instructions
//! more, a dozen times per forwarded call. `mi_malloc` returns blocks aligned to 16 bytes (8 for
//! blocks of 8 bytes or less), so a layout whose alignment is at most that and at most its size is
//! asked of it, as Rust's own `System` allocator asks `malloc`; anything else of `MiMalloc`.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{mi_malloc, mi_realloc, mi_zalloc};
use mimalloc::MiMalloc;

/// The alignment of every `mi_malloc` block of 16 bytes or more (`MI_MAX_ALIGN_SIZE`; mimalloc
/// asserts it of each block it hands out, in `alloc.c`).
const PLAIN_ALIGN: usize = 16;

/// mimalloc for the global allocator (`#[global_allocator]`).
pub struct Mimalloc;

fn plain(size: usize, align: usize) -> bool {
    align <= PLAIN_ALIGN && align <= size
}

// SAFETY: every block comes from mimalloc and is freed by it (`mi_free`, through `MiMalloc`,
// frees blocks of either kind); a plain block is only asked for where its alignment holds.
unsafe impl GlobalAlloc for Mimalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(layout.size(), layout.align()) {
            // SAFETY: the layout's size is not zero (a GlobalAlloc contract).
            unsafe { mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { MiMalloc.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(layout.size(), layout.align()) {
            // SAFETY: as in `alloc`.
            unsafe { mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { MiMalloc.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if plain(new_size, layout.align()) {
            // SAFETY: `ptr` came from mimalloc; `new_size` is not zero (a GlobalAlloc contract).
            unsafe { mi_realloc(ptr.cast::<c_void>(), new_size).cast() }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes from 1 byte to 64 KiB around mimalloc's edges (8 and 16 bytes, 1 KiB, 4 KiB) with
    /// alignments from 1 to a page's, some above their size (made by hand; no Rust type has
    /// them): each block is aligned as asked, zeroed when asked, keeps what is written to it when
    /// grown or shrunk, and is freed.
    #[test]
    fn every_block_is_aligned_as_its_layout_asks() {
        let mut layouts = Vec::new();
        for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 48, 100, 1000, 1024, 1025, 1500, 4096, 5000, 65536] {
                layouts.push(Layout::from_size_align(size, align).unwrap());
            }
        }
        let fill = |block: *mut u8, size: usize| {
            // SAFETY: `block` holds at least `size` bytes.
            (0..size).for_each(|at| unsafe { *block.add(at) = (at % 251) as u8 });
        };
        for layout in layouts {
            for (zeroed, new_size) in [(false, layout.size() * 3), (true, (layout.size() / 2).max(1))] {
                // SAFETY: no layout here has size zero; each block is written within its size and
                // freed once, with the layout it has then.
                unsafe {
                    let block = if zeroed { Mimalloc.alloc_zeroed(layout) } else { Mimalloc.alloc(layout) };
                    assert!(!block.is_null(), "{layout:?}");
                    assert_eq!(block as usize % layout.align(), 0, "{layout:?} zeroed: {zeroed}");
                    if zeroed {
                        assert!(std::slice::from_raw_parts(block, layout.size()).iter().all(|&byte| byte == 0));
                    }
                    fill(block, layout.size());
                    let moved = Mimalloc.realloc(block, layout, new_size);
                    assert_eq!(moved as usize % layout.align(), 0, "{layout:?} → {new_size}");
                    let kept = layout.size().min(new_size);
                    assert!((0..kept).all(|at| *moved.add(at) == (at % 251) as u8), "{layout:?} → {new_size}");
                    Mimalloc.dealloc(moved, Layout::from_size_align(new_size, layout.align()).unwrap());
                }
            }
        }
    }
}
