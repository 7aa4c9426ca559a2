//! Helpers shared by the three-tab simulators (`tests/tabs_sim.rs`, `tests/tabs_sim_neuron.rs`;
//! each includes this file as `#[macro_use] mod tabs`): a seeded random source, the world's log,
//! and a write to storage as a browser makes it.
#![allow(dead_code)]

/// A line of the world's log (`$w.log`), formatted only when the log is kept (`$w.verbose`: one
/// seed replayed).
macro_rules! note {
    ($w:expr, $($arg:tt)*) => {
        if $w.verbose {
            $w.log.push(format!($($arg)*));
        }
    };
}

/// xorshift64: the same interleavings for the same seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// A tab writes `value` to storage (`None`: the key removed), which then holds it. `true` when that
/// changed what storage held: then, and only then, each other tab gets one `storage` event (a
/// browser fires none for a write of the same value, nor for the removal of an absent key).
pub fn write(stored: &mut Option<String>, value: Option<String>) -> bool {
    let changed = *stored != value;
    *stored = value;
    changed
}
