//! toolgate: human-in-the-loop tool approvals for AI agent chats.
//!
//! `no_std` + `alloc`: the library needs nothing from std. std is linked back in every build but
//! the shipped wasm (`abort-panics` on wasm32), where std's panic handler and its message
//! formatting (`core::fmt` and the integer/padding code it reaches) would be the only users of it.
#![no_std]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

#[macro_use]
extern crate alloc;
#[cfg(any(test, not(all(feature = "abort-panics", target_arch = "wasm32"))))]
extern crate std;

/// What std's prelude has beyond core's, for `use crate::prelude::*;` (all of it, so code written
/// against std's prelude compiles as it is).
#[allow(unused_imports)]
pub(crate) mod prelude {
    pub(crate) use alloc::borrow::ToOwned;
    pub(crate) use alloc::boxed::Box;
    #[cfg(target_arch = "wasm32")]
    pub(crate) use alloc::rc::Rc as Shared;
    pub(crate) use alloc::string::{String, ToString};
    /// Shared ownership of what is never changed once made (messages and their views): `Arc`
    /// natively, so a client and its snapshots are `Send`; `Rc` on wasm32, which runs one thread,
    /// where it does the same without atomic counts, in less code.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) use alloc::sync::Arc as Shared;
    pub(crate) use alloc::vec::Vec;
}

/// The shipped wasm's panic handler: a trap, no message. Panics are not part of the library's
/// behaviour (clippy denies the panicking calls above), so this only backs core's own checks that
/// the optimizer could not prove away, which abort (`panic = "abort"`) in any case.
#[cfg(all(feature = "abort-panics", target_arch = "wasm32", not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

pub mod approval;
pub mod client;
pub mod decisions;
pub mod error;
#[cfg(any(target_arch = "wasm32", test))]
mod heap;
pub mod json;
pub mod stream;
pub mod thread;

#[cfg(target_arch = "wasm32")]
pub mod wasm;
