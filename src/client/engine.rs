//! What both engines share: the flight (jobs, retries, the request on the wire), the notices the
//! UI shows (error, unsent text, dropped drafts, last submission), persistence and the snapshot
//! head. One copy of this code serves both dialects.

use crate::json::{self, ToJson, Value};
use crate::prelude::*;

use crate::approval::{Approval, GatedTool, Suspension};
use crate::decisions::{Decision, Decisions};
use crate::error::{Error, ErrorCode, Result};

use super::config::Config;
use super::sidenet::Rx;
use super::snapshot::{
    write_version, DraftMap, ErrorView, Messages, Phase, Snapshot, SubmissionView, SuspensionView,
};
use super::{
    listed, not_suspended, request_headers, retryable_status, same_stored, write_stored,
    HttpRequest, Method, OpId, Output, PauseKey, RequestId,
};

/// A decision submission. Neuron sends `body` (for `pause`) at once; Sidenet sends `queue` one
/// continuation at a time.
#[derive(Debug, Default)]
pub(super) struct Submission {
    pub(super) op: OpId,
    /// Neuron: the cumulative body.
    pub(super) body: String,
    /// Neuron: the pause the drafts were made on.
    pub(super) pause: PauseKey,
    /// Sidenet: to send, in card order: `queue[queued..]` are still to go, the first of them on
    /// the wire (or next); those before were taken (see [`take_queued`](Self::take_queued)).
    pub(super) queue: Vec<(String, Decision)>,
    pub(super) queued: usize,
    /// What was sent (Neuron) / acknowledged by the server, in order (Sidenet).
    pub(super) sent: Vec<(String, Decision)>,
    /// Sidenet: dropped, their call was no longer pending when their turn came.
    pub(super) skipped: Vec<String>,
    /// `rejectAllAndSend`: the message to send once the run has completed.
    pub(super) then_send: Option<String>,
}

impl Submission {
    /// Sidenet: the first call still queued.
    pub(super) fn next_queued(&self) -> Option<&(String, Decision)> {
        self.queue.get(self.queued)
    }

    /// Sidenet: takes the first call still queued (a cursor moves; no `Vec::remove`).
    pub(super) fn take_queued(&mut self) -> Option<(String, Decision)> {
        let slot = self.queue.get_mut(self.queued)?;
        self.queued += 1;
        Some(core::mem::replace(slot, (String::new(), Decision::Approve)))
    }
}

/// [`Why::Reconcile`]'s `resend` of a Neuron submission checked first because an earlier one's
/// outcome is unknown (`Client::unsure`): the same pause, not decided, gets it at once. Its error
/// is a placeholder: a failed read reports its own.
pub(super) const NOW: Option<u32> = Some(u32::MAX);

/// Why a thread is being loaded.
#[derive(Debug)]
pub(super) enum Why {
    /// `load()`.
    User,
    /// Neuron: the quiet reload after a POST, or to catch up with another tab.
    Sync,
    /// Sidenet: a stream dropped after the server accepted the request: find out where the run
    /// stands, then go on with the submission, if any.
    Recover(Option<Submission>),
    /// A message POST failed without a clear answer, or was refused (`refused`: a 409): did the
    /// text land? A refused POST may be a browser's silent re-send of one that landed (Chromium
    /// re-sends a request, even a POST, when a reused connection dies before any byte of the
    /// answer): the reload tells. Otherwise a refusal shows the state that refused it.
    VerifySend {
        text: String,
        users_before: Option<usize>,
        error: Error,
        refused: bool,
    },
    /// A decision POST got 409 / 400 / a bad body (`resend` `None`), or no clear answer (Neuron,
    /// `Some(0)`): reconcile the drafts with the server. Decisions the thread shows applied are
    /// acknowledged, and nothing goes to a pause the run moved on to (its calls may reuse the
    /// callIds). Nothing is sent again by itself: a pause shown unchanged after no clear answer
    /// may be running its tools (an append-only history), or have run one that threw; the drafts
    /// stay for the person. [`NOW`]: a submission the person made, checked first.
    Reconcile {
        sub: Submission,
        error: Error,
        resend: Option<u32>,
    },
}

/// The request of a load: the history, then (Sidenet) the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    History,
    Replay,
}

#[derive(Debug)]
pub(super) enum Job {
    Load {
        op: Option<OpId>,
        why: Why,
        stage: Stage,
        /// Sidenet: the second reading, after an empty replay that would have read as abandoned.
        recheck: bool,
    },
    Send {
        op: OpId,
        text: String,
        users_before: Option<usize>,
    },
    Submit(Submission),
}

impl Job {
    pub(super) fn is_sync(&self) -> bool {
        matches!(self, Job::Load { why: Why::Sync, .. })
    }

    pub(super) fn retryable(&self) -> bool {
        !matches!(self, Job::Send { .. })
    }

    pub(super) fn is_chat(&self) -> bool {
        !matches!(self, Job::Load { .. })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    Out(RequestId),
    Backoff(u64),
}

#[derive(Debug)]
pub(super) struct Flight {
    pub(super) job: Job,
    /// 1-based try number.
    pub(super) attempt: u32,
    pub(super) wait: Wait,
    /// The request out is an event stream (Sidenet).
    pub(super) streaming: bool,
    /// The answer being received (Sidenet).
    pub(super) rx: Option<Rx>,
}

impl Flight {
    /// Is this flight out on the wire as request `id`?
    pub(super) fn awaits(&self, id: RequestId) -> bool {
        matches!(self.wait, Wait::Out(out) if out == id)
    }
}

// One per client: boxing the flight would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(super) enum State {
    Ready,
    Busy(Flight),
}

/// The state both engines keep alike.
#[derive(Debug)]
pub(super) struct Core {
    pub(super) config: Config,
    pub(super) state: State,
    pub(super) next_op: u64,
    pub(super) next_request: u64,
    pub(super) clock: u64,
    pub(super) loaded: bool,
    pub(super) messages_version: u64,
    /// How many leading message views are the ones the last `take_unchanged` saw (each change
    /// lowers it to the index it starts at; see [`Client::take_unchanged_messages`]).
    ///
    /// [`Client::take_unchanged_messages`]: super::Client::take_unchanged_messages
    pub(super) unchanged: usize,
    /// The views the last `take_unchanged` saw (for the invariants).
    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    pub(super) taken: Vec<super::snapshot::MessageView>,
    /// Some iff paused; holds the drafts.
    pub(super) decisions: Option<Decisions>,
    pub(super) run_completed: bool,
    pub(super) failed: bool,
    pub(super) error: Option<Error>,
    pub(super) unsent_text: Option<String>,
    /// Sidenet: the `finishReason` of the last answer's `finish` chunk (see [`Snapshot`]).
    pub(super) finish_reason: Option<String>,
    pub(super) last_submission: Option<SubmissionView>,
    pub(super) dropped: Vec<String>,
    pub(super) held_restore: Option<String>,
    /// The tools allowed for the client's life (`allow_tool`): their calls are approved without
    /// asking.
    pub(super) allowed: Vec<String>,
    /// The calls approved that way since nothing was last paused, each once (a draft cleared by
    /// the user stays cleared), and whether an automatic submission has taken its draft (one is
    /// never taken twice; drafts the person made or storage gave are listed once taken).
    pub(super) auto: Vec<(String, bool)>,
    /// What storage holds for our key, as far as we know (drafts taken in from another tab count
    /// as stored).
    pub(super) persisted: Option<String>,
    /// This step took in drafts another tab wrote: nothing is written back.
    pub(super) quiet: bool,
    /// Another tab saved drafts while a command was in flight (not taken in then): see
    /// `take_missed_restore`.
    pub(super) missed: bool,
    /// Another tab saved drafts while a command was in flight (`missed` for that reason): until
    /// storage is read again, this tab writes nothing, which would replace that tab's record.
    pub(super) saved_meanwhile: bool,
    /// A new pause's step wrote nothing (`new_pause`): unless storage then holds drafts for it,
    /// which are taken in, this tab's record is written once storage has been read again.
    pub(super) fresh: bool,
    /// Storage holds another tab's record for a pause this one does not show: this tab's is
    /// written at the first step that is not quiet once no request is out (`persist`), unless the
    /// catch-up load failed or was aborted (`fail`, `aborted` make it `owed`).
    pub(super) rewrite: bool,
    /// A catch-up load failed or was stopped: storage still holds the record that asked for it,
    /// which this tab answers (its own record written, or the key removed) after the next read
    /// that succeeds (`read_ok`), not before (a tab that cannot read would start an exchange), and
    /// not once another record or a removal replaced it (`restored`).
    pub(super) owed: bool,
    /// What storage held before the last write, for `write_failed`.
    pub(super) before: Option<String>,
    /// The last write of the drafts failed (`Client::persist_failed`): the record storage held
    /// before it (`""`: none). Another tab that writes that record again (told of the removal,
    /// it writes what it holds) does not replace the drafts with it, until a write is tried again.
    pub(super) unsaved: Option<String>,
    /// The effects not yet polled: `outputs[polled..]` (FIFO; emptied once all are polled).
    pub(super) outputs: Vec<Output>,
    pub(super) polled: usize,
    pub(super) snapshot: Snapshot,
    /// `snapshot.head_after_version()` with `streaming` left out (`null`), and the version of
    /// the snapshot it is of: what `commit` compares a new snapshot with, and what `head_json`
    /// hands over while nothing streams. Only `commit` changes the fields it holds, and each
    /// change bumps the version, so it is good while its version is the snapshot's.
    head: (Option<u64>, String),
}

impl Core {
    pub(super) fn new(config: Config) -> Core {
        let snapshot = Snapshot {
            version: 0,
            phase: Phase::Idle,
            dialect: config.dialect,
            thread_id: String::new(),
            loaded: false,
            busy: false,
            syncing: false,
            messages_version: 0,
            messages: Messages::default(),
            streaming: None,
            suspension: None,
            decisions: DraftMap::default(),
            can_send: true,
            can_submit: false,
            error: None,
            unsent_text: None,
            last_submission: None,
            dropped_drafts: Vec::new(),
            allowed_tools: Vec::new(),
            finish_reason: None,
        };
        Core {
            config,
            state: State::Ready,
            next_op: 0,
            next_request: 0,
            clock: 0,
            loaded: false,
            messages_version: 0,
            unchanged: 0,
            #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
            taken: Vec::new(),
            decisions: None,
            run_completed: false,
            failed: false,
            error: None,
            unsent_text: None,
            last_submission: None,
            finish_reason: None,
            dropped: Vec::new(),
            held_restore: None,
            allowed: Vec::new(),
            auto: Vec::new(),
            persisted: None,
            quiet: false,
            missed: false,
            saved_meanwhile: false,
            fresh: false,
            rewrite: false,
            owed: false,
            before: None,
            unsaved: None,
            outputs: Vec::new(),
            polled: 0,
            snapshot,
            head: (None, String::new()),
        }
    }

    /// The next effect, if any. A plain `Vec` and a cursor rather than a `VecDeque` (less code):
    /// a polled slot holds a placeholder until the last output is polled and the list is cleared.
    pub(super) fn poll_output(&mut self) -> Option<Output> {
        let slot = self.outputs.get_mut(self.polled)?;
        let output = core::mem::replace(slot, Output::Changed);
        self.polled += 1;
        if self.polled == self.outputs.len() {
            self.outputs.clear();
            self.polled = 0;
        }
        Some(output)
    }

    /// Not inlined: every command and input starts with it.
    #[inline(never)]
    pub(super) fn tick(&mut self, now: u64) {
        self.clock = self.clock.max(now);
    }

    pub(super) fn new_op(&mut self) -> OpId {
        self.next_op += 1;
        self.next_op
    }

    pub(super) fn done(&mut self, op: OpId, result: Result<()>) {
        self.outputs.push(Output::Done { op, result });
    }

    /// `op` (if any) succeeded: [`done`](Self::done) with `Ok`, built here, not at each caller.
    #[inline(never)]
    pub(super) fn resolve(&mut self, op: Option<OpId>) {
        if let Some(op) = op {
            self.done(op, Ok(()));
        }
    }

    /// Resolves `op` (if any) with `error`, shown as the current error.
    pub(super) fn refuse(&mut self, op: Option<OpId>, error: Error) {
        if let Some(op) = op {
            self.done(op, Err(error.clone()));
        }
        self.error = Some(error);
    }

    /// `rejectAllAndSend` found the run paused again: the text waits, the op fails.
    pub(super) fn paused_again(&mut self, op: OpId, text: String) {
        let error = Error::new(
            ErrorCode::InputLocked,
            "the run paused again: decide the new tools, then send the message",
        );
        self.give_up(Some(op), Some(text), error, false);
    }

    /// The op (if any) fails with `error`, shown; `text` waits in `unsentText`; phase `error` if
    /// `failed`.
    pub(super) fn give_up(
        &mut self,
        op: Option<OpId>,
        text: Option<String>,
        error: Error,
        failed: bool,
    ) {
        if failed {
            self.failed = true;
        }
        self.unsend(text);
        self.refuse(op, error);
    }

    pub(super) fn unsend(&mut self, text: Option<String>) {
        if text.is_some() {
            self.unsent_text = text;
        }
    }

    pub(super) fn clear_notices(&mut self) {
        self.failed = false;
        self.error = None;
        self.finish_reason = None;
        self.dropped.clear();
    }

    pub(super) fn drop_draft(&mut self, call_id: &str) {
        if !listed(&self.dropped, call_id) {
            self.dropped.push(call_id.to_owned());
        }
    }

    /// `busy` unless nothing is outstanding or only a quiet reload (which commands preempt).
    pub(super) fn check_not_busy(&self) -> Result<()> {
        if self.busy() {
            return Err(Error::new(
                ErrorCode::Busy,
                "a request is already in flight for this thread",
            ));
        }
        Ok(())
    }

    /// The checks and notices common to every `send`: the new op.
    pub(super) fn begin_send(&mut self, now: u64, text: &str, paused: bool) -> Result<OpId> {
        self.tick(now);
        check_text(text)?;
        self.check_not_busy()?;
        if paused {
            return Err(Error::new(
                ErrorCode::InputLocked,
                "the conversation awaits approval: decide every pending tool (or reject all and send) first",
            ));
        }
        self.clear_notices();
        self.unsent_text = None;
        self.last_submission = None;
        Ok(self.new_op())
    }

    /// A load or reload found nothing paused: a submission that left calls pending is stale (they
    /// were decided elsewhere, or the pause went away); one that completed the run stays, as the
    /// reload after its own POST shows just that.
    pub(super) fn unpaused(&mut self) {
        // The read a new pause asked for (`fresh`) is of that pause: once nothing is paused it is
        // a read like any other, and a record left in storage (a continuation's, listing its call
        // as settled, of a pause adopted while a command went on) loads the thread and is removed.
        self.fresh = false;
        if matches!(&self.last_submission, Some(l) if l.status != Phase::Completed) {
            self.last_submission = None;
        }
    }

    /// The drafts, to edit; `not_suspended` when nothing is paused.
    fn decisions_mut(&mut self) -> Result<&mut Decisions> {
        match &mut self.decisions {
            Some(decisions) => Ok(decisions),
            None => Err(not_suspended()),
        }
    }

    /// Sets a draft; `busy`, `not_suspended`, `unknown_call_id`.
    pub(super) fn set_draft(&mut self, call_id: &str, decision: Decision) -> Result<()> {
        self.check_not_busy()?;
        self.decisions_mut()?.set(call_id, decision)
    }

    /// Is a submission due after a decision (autoSubmit, every tool decided)?
    pub(super) fn auto_submit_due(&self) -> bool {
        self.config.auto_submit && self.decisions.as_ref().is_some_and(Decisions::is_complete)
    }

    /// Drops a draft; `true` if there was one (for the audit: always `false` in a build without
    /// it, whose callers do nothing with the answer).
    pub(super) fn clear_draft(&mut self, call_id: &str) -> Result<bool> {
        self.check_not_busy()?;
        let decisions = self.decisions_mut()?;
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        let had = decisions.local().any(|(id, _)| id == call_id);
        #[cfg(not(any(debug_assertions, fuzzing, feature = "invariants")))]
        let had = false;
        decisions.clear(call_id)?;
        Ok(had)
    }

    /// Rejects every undecided tool with `reason`; `not_suspended` without a pause.
    pub(super) fn reject_undecided(&mut self, reason: Option<&str>) -> Result<()> {
        self.decisions_mut()?.reject_undecided(reason);
        Ok(())
    }

    /// The callIds without a decision (for the audit only: a build without it lists none).
    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    pub(super) fn undecided(&self) -> Vec<String> {
        self.decisions
            .as_ref()
            .map_or_else(Vec::new, Decisions::undecided_ids)
    }

    /// Keeps stored drafts for the first load; after it (drafts another tab wrote, `""` once it
    /// removed them), unless a command is in flight, hands the stored ones back to apply in place
    /// of the drafts (`quiet`: the engine clears them when the stored ones are for the pause it
    /// shows) and writes nothing back in this step; a removal leaves the drafts, written again.
    pub(super) fn restore<'a>(&mut self, persisted: &'a str) -> Option<&'a str> {
        if self.loaded {
            self.quiet = true;
            if self.busy() {
                (self.missed, self.saved_meanwhile) = (true, true);
                return None;
            }
            // The key removed: the other tab shows no pause (a removal says no more). These
            // drafts stay, and are written again once a reload shows the pause is still there
            // (`restored`: not before, nor after a reload that failed, which would start an
            // exchange with the other tab).
            return Some(persisted);
        }
        self.persisted = Some(persisted.to_owned());
        self.held_restore = Some(persisted.to_owned());
        None
    }

    /// The tail shows a pause it did not show before. After the first load another tab may have
    /// saved drafts for it already (it got there first): this step writes nothing over them, and
    /// storage is read again once no command is in flight (`take_missed`), which takes them in.
    /// (Nothing to read without `persist`.)
    pub(super) fn new_pause(&mut self) {
        // A failed write was of the pause before: another tab's drafts for this one are taken in.
        self.unsaved = None;
        if self.loaded && self.config.persist {
            self.quiet = true;
            self.missed = true;
            self.fresh = true;
        }
    }

    /// After stored drafts were handed over and applied (`taken`: they were for the pause shown,
    /// `Some(behind)`): on the read that follows a new pause, drafts not taken in leave this tab's
    /// to write. Otherwise, whether the thread should be loaded again to catch up: the other tab
    /// is further into the same pause (`behind`: the server holds a decision this tab shows
    /// pending), or wrote drafts for a pause this one does not show (it is ahead, or behind and
    /// answering a pause over here: the load tells), or removed them (`pause_shown`: its pause may
    /// be over). In those last two cases storage holds the other tab's record, not this one's:
    /// this tab's (if it shows a pause) is written at the next step that writes, after the load
    /// (`rewrite`; not now: a tab behind would write its stale record back and forth with the one
    /// ahead), so that no tab's drafts stay lost to the record of a pause that is over.
    pub(super) fn restored(
        &mut self,
        taken: Option<bool>,
        stored: &str,
        pause_shown: bool,
    ) -> bool {
        let fresh = core::mem::take(&mut self.fresh);
        if fresh && taken.is_none() {
            self.quiet = false;
            self.persisted = None;
        }
        let catch_up = taken.is_none() && !fresh && (pause_shown || !stored.is_empty());
        self.rewrite = catch_up;
        self.owed = false;
        catch_up || taken == Some(true)
    }

    /// A read of the thread succeeded: a record owed since a catch-up failed is written now.
    pub(super) fn read_ok(&mut self) {
        self.loaded = true;
        self.rewrite |= core::mem::take(&mut self.owed);
    }

    /// Whether a command is in flight (as `check_not_busy`, without building its error).
    fn busy(&self) -> bool {
        matches!(&self.state, State::Busy(f) if !f.job.is_sync())
    }

    /// Whether another tab saved drafts during a command that is now over (once).
    pub(super) fn take_missed(&mut self) -> bool {
        let missed = self.missed && !self.busy();
        self.missed &= !missed;
        self.saved_meanwhile &= !missed;
        missed
    }

    /// Puts a request on the wire (the job is the flight's).
    pub(super) fn http(
        &mut self,
        job: Job,
        attempt: u32,
        method: Method,
        url: String,
        body: Option<String>,
        streaming: bool,
    ) -> RequestId {
        self.next_request += 1;
        let id = RequestId(self.next_request);
        let headers = request_headers(&self.config, method, streaming);
        self.outputs.push(Output::Http(HttpRequest {
            id,
            method,
            url,
            headers,
            body,
            timeout_ms: self.config.timeout_ms,
            streaming,
        }));
        self.fly(job, attempt, Wait::Out(id), streaming);
        id
    }

    /// `job` is the flight now, waiting as `wait` says, no answer yet (one copy of the move in).
    #[inline(never)]
    fn fly(&mut self, job: Job, attempt: u32, wait: Wait, streaming: bool) {
        self.state = State::Busy(Flight {
            job,
            attempt,
            wait,
            streaming,
            rx: None,
        });
    }

    /// The flight awaiting request `id`, taken off the wire.
    pub(super) fn take_flight(&mut self, id: RequestId) -> Option<Flight> {
        let ok = matches!(&self.state, State::Busy(Flight {
                wait: Wait::Out(current),
                ..
            }) if *current == id);
        self.take_if(ok)
    }

    /// The flight, taken (the state `Ready`) if `ok`.
    fn take_if(&mut self, ok: bool) -> Option<Flight> {
        if !ok {
            return None;
        }
        match core::mem::replace(&mut self.state, State::Ready) {
            State::Busy(flight) => Some(flight),
            State::Ready => None,
        }
    }

    /// Ends the flight (a `Cancel` for a request on the wire, whose id is returned).
    pub(super) fn cancel(&mut self) -> Option<(Flight, Option<RequestId>)> {
        let State::Busy(flight) = core::mem::replace(&mut self.state, State::Ready) else {
            return None;
        };
        let mut out = None;
        if let Wait::Out(id) = flight.wait {
            self.outputs.push(Output::Cancel(id));
            out = Some(id);
        }
        Some((flight, out))
    }

    /// The flight whose retry is due at `now`.
    pub(super) fn due(&mut self, now: u64) -> Option<Flight> {
        let ok = matches!(&self.state, State::Busy(Flight {
                wait: Wait::Backoff(deadline),
                ..
            }) if now >= *deadline);
        self.take_if(ok)
    }

    pub(super) fn poll_timeout(&self) -> Option<u64> {
        match &self.state {
            State::Busy(Flight {
                wait: Wait::Backoff(deadline),
                ..
            }) => Some(*deadline),
            _ => None,
        }
    }

    pub(super) fn retry_or_fail(&mut self, now: u64, job: Job, attempt: u32, error: Error) {
        if job.retryable() && attempt < self.config.retry.attempts {
            let deadline = now.saturating_add(self.config.retry.delay(attempt));
            // `streaming` is set again when the retry is issued.
            self.fly(job, attempt, Wait::Backoff(deadline), false);
        } else {
            self.fail(job, error);
        }
    }

    /// A non-2xx answer: retried (as [`retry_or_fail`](Self::retry_or_fail)) when its status is
    /// worth retrying, else the job fails for good.
    pub(super) fn status_failed(
        &mut self,
        now: u64,
        job: Job,
        attempt: u32,
        status: u16,
        error: Error,
    ) {
        // One call for both: a status not worth retrying fails as a last try would.
        let attempt = if retryable_status(status) {
            attempt
        } else {
            u32::MAX
        };
        self.retry_or_fail(now, job, attempt, error);
    }

    /// The job failed for good: phase `error` (a quiet reload only shows the error), drafts kept.
    pub(super) fn fail(&mut self, mut job: Job, error: Error) {
        self.owed |= core::mem::take(&mut self.rewrite);
        if job.is_sync() {
            self.error = Some(error);
            return;
        }
        let (op, text, original) = leftovers(&mut job);
        // The error the read was about, unless the read was refused for want of credentials:
        // that is what the person has to act on first (and what any later request would meet).
        let error = match original {
            Some(original) if error.code != ErrorCode::Unauthorized => original.clone(),
            _ => error,
        };
        self.give_up(op, text, error, true);
    }

    /// The job was aborted: its op resolves with `aborted`, the text it carried goes to `unsentText`
    /// (a message's only if `keep_text`).
    pub(super) fn aborted(&mut self, mut job: Job, keep_text: bool) {
        self.owed |= core::mem::take(&mut self.rewrite);
        let keep_text = keep_text || !matches!(job, Job::Send { .. });
        let (op, text, _) = leftovers(&mut job);
        self.unsend(text.filter(|_| keep_text));
        if let Some(op) = op {
            self.done(op, Err(err_aborted()));
        }
    }

    /// The phase the UI sees: the flight's, else the tail's.
    pub(super) fn phase(&self, paused: bool, expired: bool) -> Phase {
        if let State::Busy(flight) = &self.state {
            if flight.job.is_chat() && matches!(flight.rx, Some(Rx::Stream(..))) {
                return Phase::Streaming;
            }
            match &flight.job {
                Job::Load {
                    why: Why::User | Why::Recover(None),
                    ..
                } => return Phase::Loading,
                Job::Load { why: Why::Sync, .. } => {}
                Job::Load {
                    why: Why::VerifySend { refused: false, .. },
                    ..
                }
                | Job::Send { .. } => return Phase::Sending,
                Job::Load {
                    why: Why::VerifySend { refused: true, .. } | Why::Reconcile { resend: None, .. },
                    ..
                } => return Phase::Conflict,
                // (The read after a submission the server accepted without saying where the run
                // stands is part of it: `submit()` is still out.)
                Job::Submit(_)
                | Job::Load {
                    why: Why::Reconcile { .. } | Why::Recover(Some(_)),
                    ..
                } => return Phase::Submitting,
            }
        }
        if self.failed {
            Phase::Error
        } else if paused {
            Phase::AwaitingApproval
        } else if expired {
            Phase::Expired
        } else if self.run_completed {
            Phase::Completed
        } else {
            Phase::Idle
        }
    }

    /// The snapshot but `version` and `streaming`.
    pub(super) fn head(
        &self,
        phase: Phase,
        messages: Messages,
        suspension: Option<SuspensionView>,
        can_submit: bool,
        paused: bool,
    ) -> Snapshot {
        let (busy, syncing) = match &self.state {
            State::Busy(f) => (!f.job.is_sync(), f.job.is_sync()),
            State::Ready => (false, false),
        };
        Snapshot {
            version: self.snapshot.version,
            phase,
            dialect: self.config.dialect,
            thread_id: self.config.thread_id.clone(),
            loaded: self.loaded,
            busy,
            syncing,
            messages_version: self.messages_version,
            messages,
            streaming: None,
            suspension,
            decisions: self.drafts(),
            can_send: !busy && !paused,
            can_submit: !busy && can_submit,
            error: self.error.as_ref().map(ErrorView::from),
            unsent_text: self.unsent_text.clone(),
            last_submission: self.last_submission.clone(),
            dropped_drafts: self.dropped.clone(),
            allowed_tools: self.allowed.clone(),
            finish_reason: self.finish_reason.clone(),
        }
    }

    /// Adds a tool to the allowed ones (`allow`), or removes it: later pauses ask for it again;
    /// drafts already made stay.
    pub(super) fn allow_tool(&mut self, name: &str, allow: bool) {
        self.allowed.retain(|n| n != name);
        if allow {
            self.allowed.push(name.to_owned());
        }
    }

    /// The allowed tools' part of a step, with the pause's `pending` tools: when no command is in
    /// flight, approves each undecided call of an allowed tool (once per call). `true` when the
    /// decision set is then complete and every draft in it approves a call of an allowed tool (made
    /// here, by the person, or restored from storage) that no automatic submission has taken yet:
    /// no person needs to be asked, the caller submits it; its drafts are marked taken, so a
    /// submission that fails or is aborted is not started again. `approved` hears of each
    /// approval (for the audit). One copy for both engines: not inlined, `approved` not generic.
    #[inline(never)]
    pub(super) fn allow_step(
        &mut self,
        pending: &[GatedTool],
        approved: &mut dyn FnMut(&str),
    ) -> bool {
        let idle = !self.busy();
        let Some(decisions) = &mut self.decisions else {
            // Nothing paused: the calls remembered are over.
            self.auto.clear();
            return false;
        };
        if !idle {
            return false;
        }
        let auto = &mut self.auto;
        // Complete: every pending tool (there is one while paused) has a draft. Not
        // `is_complete`: a tail repeating a callId is complete by its decided twin's record, a
        // decision nobody made now.
        let mut drafted = true;
        for tool in pending {
            let id = &tool.call_id;
            // One look-up: a call approved here has a draft after it.
            let (draft, effective) = decisions.lookup(id);
            let (mut drafted_here, decided) = (draft.is_some(), effective.is_some());
            if !decided
                && self.allowed.contains(&tool.name)
                && auto_entry(auto, id).is_none()
                && decisions.put_found(id, Some(Decision::Approve))
            {
                drafted_here = true;
                auto.push((id.clone(), false));
                approved(id);
            }
            // Sidenet: a card whose decision the server accepted needs nobody either.
            drafted &= drafted_here || tool.approval != Approval::Pending;
        }
        let due = drafted
            && decisions.local().all(|(id, d)| {
                *d == Decision::Approve
                    && pending
                        .iter()
                        .any(|t| t.call_id == id && self.allowed.contains(&t.name))
                    && !auto_entry(auto, id).is_some_and(|(_, sent)| *sent)
            });
        if due {
            for (id, _) in decisions.local() {
                match auto_entry(auto, id) {
                    Some(entry) => entry.1 = true,
                    None => auto.push((id.to_owned(), true)),
                }
            }
        }
        due
    }

    pub(super) fn drafts(&self) -> DraftMap {
        DraftMap::of(self.decisions.as_ref())
    }

    /// Persists the drafts (`desired`) if they changed, unless they were just taken in from
    /// another tab (which storage then holds: writing them back could only start an exchange).
    pub(super) fn persist(&mut self, desired: Option<String>) {
        // Nor when another tab saved during the command this step ended: storage holds that
        // tab's record, which the read that follows (`take_missed`) takes in first; writing this
        // tab's now would replace it, and the other tab take the replacement in, its drafts lost.
        let quiet = core::mem::take(&mut self.quiet) || (self.saved_meanwhile && !self.busy());
        // Once the catch-up load is over (and it did not fail: `fail` and `aborted` drop the
        // rewrite), not while it or its retries are out: a tab that cannot read the thread would
        // write its stale record, the other tab reload and write its own again, without end.
        let rewrite = !quiet && self.rewrite && matches!(self.state, State::Ready);
        self.rewrite &= !rewrite;
        if rewrite || !same_stored(desired.as_deref(), self.persisted.as_deref()) {
            let before = core::mem::replace(&mut self.persisted, desired);
            if !quiet {
                // After a failed write storage holds what it held before it (or the other tab's
                // write-back of that), not the record that failed.
                self.before = self.unsaved.take().or(before);
                self.outputs.push(Output::Persist {
                    key: self.config.persist_key(),
                    value: self.persisted.clone(),
                });
            }
        }
    }

    /// The last write failed (see `unsaved`).
    pub(super) fn write_failed(&mut self) {
        self.unsaved = Some(self.before.take().unwrap_or_default());
    }

    /// Should the drafts be persisted now?
    pub(super) fn persisting(&self) -> bool {
        self.config.persist && self.held_restore.is_none()
    }

    /// The stored form of the drafts (a record with none when all are cleared), for the pause
    /// written under `pause_key`.
    pub(super) fn stored(
        &self,
        pause_key: &str,
        pause: Option<&str>,
        call_ids: &[String],
        tail: &Suspension,
        taken: Option<&String>,
        elsewhere: &[String],
    ) -> Option<String> {
        // (None stored is a record too while paused: another tab then knows which pause's drafts
        // were all cleared, where a removed key could be any pause's.)
        Some(write_stored(
            pause_key,
            pause,
            call_ids,
            tail,
            taken,
            elsewhere,
            &self.auto,
            &self.drafts(),
        ))
    }

    /// Takes `next` (built from the current state, without `streaming`) as the snapshot if it
    /// differs, or if the streaming message changed in place (`dirty`): one `Changed`. The streaming
    /// message moves from the old snapshot to the new, never cloned.
    ///
    /// "Differs" is judged on what the UI receives: the same `messages` list and the same JSON
    /// for every other field but `version` (`streaming` is out of both). The derived `Snapshot`
    /// comparison it replaces cost over a kilobyte of wasm; the two texts are short, as `messages`
    /// is not written, and the old one is kept from the commit that made it.
    pub(super) fn commit(&mut self, mut next: Snapshot, dirty: bool) {
        let streaming = self.snapshot.streaming.take();
        let version = self.snapshot.version.saturating_add(1);
        let changed = dirty || next.messages != self.snapshot.messages || {
            let text = next.head_after_version();
            let differs = text != self.head_text();
            if differs {
                self.head = (Some(version), text);
            }
            differs
        };
        // One snapshot dropped whole, at one place: the old one that `next` replaces, else
        // `next` (nothing moved out of it).
        let dropped = if changed {
            next.streaming = streaming;
            next.version = version;
            self.outputs.push(Output::Changed);
            core::mem::replace(&mut self.snapshot, next)
        } else {
            self.snapshot.streaming = streaming;
            next
        };
        drop(dropped);
    }

    /// `snapshot.head_after_version()`, kept. Called while `snapshot.streaming` is `None` (taken
    /// out by `commit`, or nothing streams).
    fn head_text(&mut self) -> &str {
        let (version, text) = &mut self.head;
        if *version != Some(self.snapshot.version) {
            *text = self.snapshot.head_after_version();
            *version = Some(self.snapshot.version);
        }
        &self.head.1
    }

    /// The JSON of `snapshot.head_without_stream_text()`: while nothing streams, from the text
    /// `commit` wrote (one write per change, not one more per `getSnapshot`).
    pub(super) fn head_json(&mut self) -> String {
        if self.snapshot.streaming.is_some() {
            return self.snapshot.head_without_stream_text().to_json_string();
        }
        let mut text = String::new();
        write_version(&mut text, self.snapshot.version);
        text.push_str(self.head_text());
        text
    }

    /// The messages changed from view `from` on (views before it are the same).
    pub(super) fn messages_changed(&mut self, from: usize) {
        self.messages_version += 1;
        self.unchanged = self.unchanged.min(from);
    }

    /// See [`Client::take_unchanged_messages`](super::Client::take_unchanged_messages).
    pub(super) fn take_unchanged(&mut self) -> usize {
        let messages = self.snapshot.messages.as_slice();
        let same = self.unchanged.min(messages.len());
        self.unchanged = messages.len();
        #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
        {
            self.taken = messages.to_vec();
        }
        same
    }

    /// The views not changed since the last `take_unchanged` are the ones it saw (for the
    /// invariants).
    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    pub(super) fn check_unchanged(&self) -> core::result::Result<(), String> {
        let messages = self.snapshot.messages.as_slice().iter();
        let mut same = messages.zip(&self.taken).take(self.unchanged);
        if let Some(i) = same.position(|(now, seen)| now != seen) {
            return Err(format!("view {i} changed, yet counted as unchanged"));
        }
        Ok(())
    }

    /// The kept head JSON, while good for the snapshot, is the snapshot's (for the invariants).
    #[cfg(any(debug_assertions, fuzzing, feature = "invariants"))]
    pub(super) fn check_head(&self) -> core::result::Result<(), String> {
        let (version, text) = &self.head;
        if *version == Some(self.snapshot.version)
            && self.snapshot.streaming.is_none()
            && *text != self.snapshot.head_after_version()
        {
            return Err(format!("the kept head JSON is not the snapshot's: {text}"));
        }
        Ok(())
    }
}

/// Takes in the calls a record lists as approved by an allowed tool (`ids`, its `auto`): the rule
/// approves each call once, whichever tab did, and before a reload too.
pub(super) fn seed_auto(auto: &mut Vec<(String, bool)>, ids: Option<&Value>) {
    if let Some(Value::Array(ids)) = ids {
        for id in ids {
            if let Some(id) = id.as_str() {
                if auto_entry(auto, id).is_none() {
                    auto.push((id.to_owned(), false));
                }
            }
        }
    }
}

/// The entry of call `id` among those approved by an allowed tool (`Core::auto` lists a call
/// once: `allow_step` adds one only where none is found).
#[inline(never)]
fn auto_entry<'a>(auto: &'a mut [(String, bool)], id: &str) -> Option<&'a mut (String, bool)> {
    auto.iter_mut().find(|(a, _)| a == id)
}

pub(super) fn err_aborted() -> Error {
    Error::new(ErrorCode::Aborted, "the request was aborted")
}

/// What an unfinished job leaves: its op, the text to keep unsent (taken out of it), and the
/// error it was about (a load after a failed message or submission).
///
/// Read in place: the job is dropped whole by its owner, nothing moved out of it first.
fn leftovers(job: &mut Job) -> (Option<OpId>, Option<String>, Option<&Error>) {
    match job {
        Job::Load { op, why, .. } => match why {
            Why::User | Why::Sync | Why::Recover(None) => (*op, None, None),
            Why::Recover(Some(sub)) => (*op, sub.then_send.take(), None),
            Why::VerifySend { text, error, .. } => (*op, Some(core::mem::take(text)), Some(error)),
            Why::Reconcile { sub, error, resend } => (
                *op,
                sub.then_send.take(),
                if *resend != NOW { Some(error) } else { None },
            ),
        },
        Job::Send { op, text, .. } => (Some(*op), Some(core::mem::take(text)), None),
        Job::Submit(sub) => (Some(sub.op), sub.then_send.take(), None),
    }
}

/// `invalid_argument` for a blank message.
pub(super) fn check_text(text: &str) -> Result<()> {
    if json::is_blank(Some(text)) {
        return Err(Error::new(
            ErrorCode::InvalidArgument,
            "the message is empty",
        ));
    }
    Ok(())
}
