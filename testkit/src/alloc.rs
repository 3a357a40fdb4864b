//! A global allocator that counts live bytes and their peak, for tests and benchmarks that
//! bound memory. A binary opts in with
//! `#[global_allocator] static ALLOC: savegame_testkit::Counting = savegame_testkit::Counting::new();`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The system allocator, counting the bytes live now and their peak, and optionally watching
/// freed blocks for a byte pattern (to check that secrets are wiped before they are freed).
pub struct Counting {
    live: AtomicUsize,
    peak: AtomicUsize,
    /// When set, every freed block of exactly `watch_len` bytes is checked for `watch_byte`
    /// repeated; a match sets `seen`.
    watch_len: AtomicUsize,
    watch_byte: AtomicUsize,
    seen: AtomicBool,
}

impl Default for Counting {
    fn default() -> Self {
        Self::new()
    }
}

impl Counting {
    /// An allocator with nothing counted yet, for a `static`.
    pub const fn new() -> Self {
        Counting {
            live: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            watch_len: AtomicUsize::new(0),
            watch_byte: AtomicUsize::new(0),
            seen: AtomicBool::new(false),
        }
    }

    /// Bytes allocated now.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Restarts peak tracking from the current live bytes; returns them.
    pub fn reset_peak(&self) -> usize {
        let live = self.live();
        self.peak.store(live, Ordering::SeqCst);
        live
    }

    /// The most bytes allocated at once since the last reset.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    /// Runs `f` and returns how many bytes were allocated at its peak, above what was live
    /// before. Whatever else runs meanwhile (other test threads) is counted too.
    pub fn peak_during(&self, f: impl FnOnce()) -> usize {
        let base = self.reset_peak();
        f();
        self.peak().saturating_sub(base)
    }

    /// Starts watching freed blocks of `len` bytes for `byte` repeated.
    pub fn watch_freed(&self, len: usize, byte: u8) {
        self.seen.store(false, Ordering::SeqCst);
        self.watch_byte.store(byte as usize, Ordering::SeqCst);
        self.watch_len.store(len, Ordering::SeqCst);
    }

    /// Whether a watched block was freed still holding the pattern; stops watching.
    pub fn take_seen(&self) -> bool {
        self.watch_len.store(0, Ordering::SeqCst);
        self.seen.swap(false, Ordering::SeqCst)
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = self.live.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            self.peak.fetch_max(live, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let len = self.watch_len.load(Ordering::SeqCst);
        if len != 0 && layout.size() == len {
            let byte = self.watch_byte.load(Ordering::SeqCst) as u8;
            let block = unsafe { std::slice::from_raw_parts(ptr, len) };
            if block.iter().all(|&b| b == byte) {
                self.seen.store(true, Ordering::SeqCst);
            }
        }
        unsafe { System.dealloc(ptr, layout) };
        self.live.fetch_sub(layout.size(), Ordering::SeqCst);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let live = self.live.fetch_add(grow, Ordering::SeqCst) + grow;
                self.peak.fetch_max(live, Ordering::SeqCst);
            } else {
                self.live
                    .fetch_sub(layout.size() - new_size, Ordering::SeqCst);
            }
        }
        p
    }
}
