//! toolgate: human-in-the-loop tool approvals for AI agent chats.
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

pub mod approval;
pub mod client;
pub mod decisions;
pub mod error;
pub mod json;
pub mod stream;
pub mod thread;

#[cfg(target_arch = "wasm32")]
pub mod wasm;
