//! The preview of a page being written (issue 51): whatever the partial page, one preview
//! allocates a bounded amount of memory. Counted by this binary's own allocator, per thread,
//! so tests running beside it do not count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use mcp_gen_ui_actors::generation::preview::inert_tree;

mod preview_pages;

struct Counting;

thread_local! {
    /// Bytes live on this thread, and the most since the last `reset`.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most memory allocated at once while `f` ran, over what was live before it.
fn peak_of(f: impl FnOnce()) -> usize {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    f();
    (PEAK.with(Cell::get) - before).max(0) as usize
}

/// Issue 51's acceptance is 20 MB a preview at most (the bench, tests/bench/preview.py, prints
/// each page's figure); a plain page of the same size takes well under 1 MB.
const MOST: usize = 20 << 20;

#[test]
fn no_partial_page_makes_a_preview_allocate_more_than_20_mb() {
    let plain = preview_pages::plain();
    let base = peak_of(|| drop(inert_tree(&plain)));
    for (name, page) in preview_pages::hostile() {
        let peak = peak_of(|| drop(inert_tree(&page)));
        assert!(peak <= MOST, "{name}: {peak} bytes at once (a plain page: {base})");
    }
}
