//! A `Decisions` built from an arbitrary tail, driven by arbitrary approve / reject / clear / set
//! ops (known and unknown callIds), checked against a model after every op: only gated callIds are
//! accepted (others are `unknown_call_id` and change nothing); the payload is the tail's decisions
//! overlaid with the local ones, in tail order, never empty when `Ok`; the wire form is exact.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use toolgate::approval::Suspension;
use toolgate::decisions::{Decision, Decisions};
use toolgate::error::ErrorCode;
use toolgate::thread::Message;

#[path = "serde_oracle.rs"]
mod serde_oracle;
use serde_oracle::tg;

const IDS: [&str; 6] = ["a", "b", "call_\"q\"", "é\u{1F600}", "", "x\\y"];

#[derive(Debug, Arbitrary)]
enum ApprovalIn {
    Absent,
    Null,
    Pending,
    Approved,
    Rejected,
}

#[derive(Debug, Arbitrary)]
struct ToolIn {
    id: u8,
    approval: ApprovalIn,
    reject_reason: Option<String>,
    junk: bool,
}

#[derive(Debug, Arbitrary)]
struct Tail {
    tool_call: bool,
    message_id: Option<u8>,
    tools: Vec<ToolIn>,
}

#[derive(Debug, Arbitrary)]
enum Id {
    Known(u8),
    Other(String),
}

#[derive(Debug, Arbitrary)]
enum Op {
    Approve(Id),
    Reject(Id, Option<String>),
    Clear(Id),
    SetRejectWith(Id, String),
}

#[derive(Debug, Arbitrary)]
struct Input {
    tail: Tail,
    ops: Vec<Op>,
}

fn call_id(n: u8) -> &'static str {
    IDS[usize::from(n) % IDS.len()]
}

fn tail_message(tail: &Tail) -> Value {
    let tools: Vec<Value> = tail
        .tools
        .iter()
        .map(|t| {
            let mut o = json!({"callId": call_id(t.id), "name": "tool", "inputs": {}});
            match t.approval {
                ApprovalIn::Absent => {}
                ApprovalIn::Null => o["approval"] = Value::Null,
                ApprovalIn::Pending => o["approval"] = json!("pending"),
                ApprovalIn::Approved => o["approval"] = json!("approved"),
                ApprovalIn::Rejected => o["approval"] = json!("rejected"),
            }
            if let Some(r) = &t.reject_reason {
                o["rejectReason"] = json!(r);
            }
            if t.junk {
                o["zz_unknown"] = json!({"nested": [1, "two", null]});
            }
            o
        })
        .collect();
    let mut m = json!({"role": "assistant", "content": [], "tools": tools});
    if tail.tool_call {
        m["type"] = json!("tool_call");
    }
    if let Some(id) = tail.message_id {
        m["__id"] = json!(format!("m{id}"));
    }
    m
}

/// The model: gated callIds in tail order (first occurrence), the tail's decision, the local one.
struct Model {
    entries: Vec<(String, Option<Decision>, Option<Decision>)>,
}

fn norm_reject(reason: Option<&str>) -> Decision {
    match reason {
        Some(r) if !r.trim().is_empty() => Decision::Reject(Some(r.to_owned())),
        _ => Decision::Reject(None),
    }
}

fn wire(d: &Decision) -> Value {
    match d {
        Decision::Approve => json!("approve"),
        Decision::Reject(None) => json!("reject"),
        Decision::Reject(Some(r)) => json!(["reject", r]),
    }
}

impl Model {
    fn expected_body(&self) -> Option<String> {
        let parts: Vec<String> = self
            .entries
            .iter()
            .filter_map(|(id, tail, local)| {
                local.as_ref().or(tail.as_ref()).map(|d| {
                    format!(
                        "{}:{}",
                        serde_json::to_string(id).unwrap(),
                        serde_json::to_string(&wire(d)).unwrap()
                    )
                })
            })
            .collect();
        if parts.is_empty() {
            None
        } else {
            Some(format!("{{\"decisions\":{{{}}}}}", parts.join(",")))
        }
    }

    fn find(&mut self, id: &str) -> Option<&mut (String, Option<Decision>, Option<Decision>)> {
        self.entries.iter_mut().find(|e| e.0 == id)
    }
}

fn resolve(id: &Id) -> &str {
    match id {
        Id::Known(n) => call_id(*n),
        Id::Other(s) => s,
    }
}

fn check(decisions: &Decisions, model: &Model) {
    let ids: Vec<&str> = decisions.call_ids().collect();
    let mids: Vec<&str> = model.entries.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(ids, mids, "gated callIds / tail order");
    match (decisions.to_json_string(), model.expected_body()) {
        (Ok(body), Some(expected)) => {
            assert_eq!(body, expected, "wire form");
            let payload = decisions.payload().unwrap();
            assert!(!payload.is_empty());
            assert_eq!(payload.iter().count(), payload.len());
            for (id, d) in payload.iter() {
                assert!(
                    mids.contains(&id),
                    "payload has a callId not gated on the tail"
                );
                assert_eq!(Decision::from_wire(&d.to_wire()).unwrap(), *d);
            }
        }
        (Err(e), None) => {
            assert_eq!(e.code, ErrorCode::EmptyDecisions);
            assert_eq!(
                decisions.payload().unwrap_err().code,
                ErrorCode::EmptyDecisions
            );
        }
        (got, want) => panic!("payload {got:?}, expected {want:?}"),
    }
    let undecided: Vec<&str> = model
        .entries
        .iter()
        .filter(|e| e.2.is_none() && e.1.is_none())
        .map(|e| e.0.as_str())
        .collect();
    assert_eq!(decisions.undecided(), undecided);
    assert_eq!(decisions.is_complete(), undecided.is_empty());
    for (id, tail, local) in &model.entries {
        assert_eq!(
            decisions.get(id).unwrap(),
            local.clone().or_else(|| tail.clone())
        );
    }
}

fuzz_target!(|input: Input| {
    let message = Message::from_value(tg(&tail_message(&input.tail))).expect("valid tail");
    let suspension = Suspension::from_message(&message);
    let decisions = Decisions::new(&suspension);
    let Ok(mut decisions) = decisions else {
        assert!(!suspension.suspended);
        assert_eq!(decisions.unwrap_err().code, ErrorCode::NotSuspended);
        return;
    };
    assert!(suspension.suspended);

    let mut model = Model {
        entries: Vec::new(),
    };
    if input.tail.tool_call {
        for t in &input.tail.tools {
            let id = call_id(t.id).to_owned();
            let tail = match t.approval {
                ApprovalIn::Absent | ApprovalIn::Null => continue,
                ApprovalIn::Pending => None,
                ApprovalIn::Approved => Some(Decision::Approve),
                ApprovalIn::Rejected => Some(norm_reject(t.reject_reason.as_deref())),
            };
            if model.entries.iter().any(|e| e.0 == id) {
                continue;
            }
            model.entries.push((id, tail, None));
        }
    }
    check(&decisions, &model);

    for op in &input.ops {
        let before = decisions.clone();
        let (id, result, new_local) = match op {
            Op::Approve(id) => {
                let id = resolve(id);
                (id, decisions.approve(id), Some(Decision::Approve))
            }
            Op::Reject(id, reason) => {
                let id = resolve(id);
                (
                    id,
                    decisions.reject(id, reason.as_deref()),
                    Some(norm_reject(reason.as_deref())),
                )
            }
            Op::SetRejectWith(id, reason) => {
                let id = resolve(id);
                let d = Decision::reject(Some(reason));
                (id, decisions.set(id, d), Some(norm_reject(Some(reason))))
            }
            Op::Clear(id) => {
                let id = resolve(id);
                (id, decisions.clear(id), None)
            }
        };
        match model.find(id) {
            Some(entry) => {
                result.expect("a gated callId was refused");
                entry.2 = new_local;
            }
            None => {
                assert_eq!(result.unwrap_err().code, ErrorCode::UnknownCallId);
                assert_eq!(decisions, before, "a refused op changed the set");
            }
        }
        check(&decisions, &model);
    }
});
