//! The bookkeeping behind `check_invariants`, shared by both dialects: every decision the user
//! took and what became of it (the ledger), the requests on the wire, the violations seen when
//! a request was built, and how many message views were built or copied.
//!
//! It exists for tests and fuzzers. It is compiled in with debug assertions (`cargo test`, the
//! browser tests, `cargo fuzz`), under `--cfg fuzzing`, or with the `invariants` feature; in a
//! release build without them it is an empty type whose methods do nothing, so the shipped wasm
//! carries none of it (nor the messages it formats: they are built by closures never called).

use crate::decisions::Decision;
#[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
use crate::prelude::*;

use super::RequestId;

/// What became of a decision the user took.
#[cfg_attr(
    not(any(debug_assertions, fuzzing, feature = "invariants")),
    allow(dead_code)
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    Held,
    Replaced,
    Cleared,
    Acknowledged,
    /// Dropped because its pause went away; listed in `droppedDrafts`.
    Dropped,
}

#[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
pub(crate) use on::Audit;

#[cfg(not(any(debug_assertions, fuzzing, feature = "invariants")))]
pub(crate) use off::Audit;

/// One decision the user took, on the pause `P` (Neuron: the tail's key; Sidenet: the run id).
#[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
#[derive(Debug, Clone)]
pub(crate) struct Entry<P> {
    pub(crate) pause: P,
    pub(crate) call_id: String,
    pub(crate) decision: Decision,
    pub(crate) fate: Fate,
}

#[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
mod on {
    use super::{Decision, Entry, Fate, RequestId};
    use crate::client::DraftMap;
    use crate::json;
    use crate::prelude::*;

    #[derive(Debug)]
    pub(crate) struct Audit<P> {
        pub(crate) violations: Vec<String>,
        pub(crate) outstanding: Vec<RequestId>,
        pub(crate) ledger: Vec<Entry<P>>,
        pub(crate) touched: u64,
    }

    impl<P: Clone> Audit<P> {
        pub(crate) fn new() -> Self {
            Audit {
                violations: Vec::new(),
                outstanding: Vec::new(),
                ledger: Vec::new(),
                touched: 0,
            }
        }

        /// Records a violation (the message is built only here).
        pub(crate) fn violation(&mut self, message: impl FnOnce() -> String) {
            self.violations.push(message());
        }

        /// A request goes on the wire: a violation if another one is still there.
        pub(crate) fn issued(&mut self, id: RequestId) {
            if !self.outstanding.is_empty() {
                let mut m = "request ".to_owned();
                m.push_str(&json::u64_string(id.0));
                m.push_str(" issued while ");
                m.push_str(&ids(&self.outstanding));
                m.push_str(" is in flight");
                self.violations.push(m);
            }
            self.outstanding.push(id);
        }

        /// A request left the wire (answered, failed, cancelled).
        pub(crate) fn ended(&mut self, id: RequestId) {
            self.outstanding.retain(|r| *r != id);
        }

        /// The user took `decision` for `call_id` on `pause` (replacing any held one).
        pub(crate) fn hold(&mut self, pause: &P, call_id: &str, decision: &Decision) {
            self.settle(call_id, Fate::Replaced);
            self.ledger.push(Entry {
                pause: pause.clone(),
                call_id: call_id.to_owned(),
                decision: decision.clone(),
                fate: Fate::Held,
            });
        }

        /// The held decision for `call_id`, if any, met its `fate`.
        pub(crate) fn settle(&mut self, call_id: &str, fate: Fate) {
            for entry in &mut self.ledger {
                if entry.fate == Fate::Held && entry.call_id == call_id {
                    entry.fate = fate;
                }
            }
        }

        /// `n` message views were built or copied.
        pub(crate) fn touch(&mut self, n: u64) {
            self.touched = self.touched.saturating_add(n);
        }

        /// The held decisions that are no longer among `drafts` were cleared (replaced by drafts
        /// another tab stored).
        pub(crate) fn forget(&mut self, drafts: &DraftMap) {
            for entry in &mut self.ledger {
                if entry.fate == Fate::Held && drafts.get(&entry.call_id) != Some(&entry.decision) {
                    entry.fate = Fate::Cleared;
                }
            }
        }

        /// The decisions held, in the order taken.
        pub(crate) fn held(&self) -> impl Iterator<Item = &Entry<P>> {
            self.ledger.iter().filter(|e| e.fate == Fate::Held)
        }

        /// The first violation, or more than one request on the wire.
        pub(crate) fn first_error(&self) -> Result<(), String> {
            if let Some(v) = self.violations.first() {
                return Err(v.clone());
            }
            if self.outstanding.len() > 1 {
                let mut m = json::u64_string(self.outstanding.len() as u64);
                m.push_str(" requests in flight: ");
                m.push_str(&ids(&self.outstanding));
                return Err(m);
            }
            Ok(())
        }
    }

    /// Request ids for messages: `[1, 2]`.
    fn ids(requests: &[RequestId]) -> String {
        let mut out = String::from("[");
        for (i, r) in requests.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&json::u64_string(r.0));
        }
        out.push(']');
        out
    }
}

#[cfg(not(any(debug_assertions, fuzzing, feature = "invariants")))]
mod off {
    use core::marker::PhantomData;

    use super::{Decision, Fate, RequestId};
    use crate::prelude::*;

    #[derive(Debug)]
    pub(crate) struct Audit<P>(PhantomData<P>);

    impl<P> Audit<P> {
        #[inline(always)]
        pub(crate) fn new() -> Self {
            Audit(PhantomData)
        }
        #[inline(always)]
        pub(crate) fn violation(&mut self, _message: impl FnOnce() -> String) {}
        #[inline(always)]
        pub(crate) fn issued(&mut self, _id: RequestId) {}
        #[inline(always)]
        pub(crate) fn ended(&mut self, _id: RequestId) {}
        #[inline(always)]
        pub(crate) fn hold(&mut self, _pause: &P, _call_id: &str, _decision: &Decision) {}
        #[inline(always)]
        pub(crate) fn settle(&mut self, _call_id: &str, _fate: Fate) {}
        #[inline(always)]
        pub(crate) fn touch(&mut self, _n: u64) {}
    }
}
