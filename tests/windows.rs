//! `pending_approvals_windows` (the document read a window at a time, as `pendingApprovals` reads a
//! `Uint8Array`) against `pending_approvals_bytes` (the whole document at once): the same result,
//! or the same error (code, message, path, line, column), for every window size on documents cut
//! everywhere, valid and bad; and the reads themselves: each byte read once, in order, no piece
//! larger than the window unless a message is, on a valid document. Native only (the browser
//! test in tests/web.rs measures wasm memory).
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use toolgate::approval::{pending_approvals_bytes, pending_approvals_windows, Suspension};
use toolgate::error::Error;

/// The reads a windowed walk made: `(offset, length)` of each.
type Reads = Vec<(usize, usize)>;

/// `pending_approvals_windows` over `doc` with `window`, and the reads it made (each checked to
/// be inside the document and not empty).
fn windowed(doc: &[u8], window: usize) -> (Result<Suspension, Error>, Reads) {
    let mut reads = Vec::new();
    let result = pending_approvals_windows(doc.len(), window, |at, dest| {
        assert!(at + dest.len() <= doc.len(), "a read past the end");
        assert!(!dest.is_empty() || doc.is_empty(), "an empty read");
        dest.copy_from_slice(&doc[at..at + dest.len()]);
        reads.push((at, dest.len()));
    });
    (result, reads)
}

/// The same as the whole-document path, for every window in `windows`.
fn same(label: &str, doc: &[u8], windows: impl IntoIterator<Item = usize>) {
    let whole = pending_approvals_bytes(doc);
    for window in windows {
        let (result, reads) = windowed(doc, window);
        assert_eq!(result, whole, "{label}, window {window}");
        if whole.is_ok() {
            // Read once, in order, to the end.
            let mut at = 0;
            for &(offset, len) in &reads {
                assert_eq!(offset, at, "{label}, window {window}: {reads:?}");
                at += len;
            }
            assert_eq!(at, doc.len(), "{label}, window {window}");
        }
    }
}

/// Every window size from 1 to past the document's length: every cut, at every position.
fn every_window(label: &str, doc: &str) {
    same(label, doc.as_bytes(), 1..=doc.len() + 2);
}

const PENDING: &str = r#"{"__id":"m2","type":"tool_call","role":"assistant","tools":[{"callId":"c1","name":"delete","inputs":{"path":"/tmp/a"},"approval":"pending","approvalReason":"writes"},{"callId":"c2","approval":"approved"}]}"#;
const USER: &str = r#"{"role":"user","content":"hi"}"#;

#[test]
fn documents_of_every_shape() {
    let docs = [
        format!("[{USER},{PENDING}]"),
        format!("[{PENDING},{USER}]"),
        format!(r#"{{"id":"t1","messages":[{USER},{PENDING}]}}"#),
        format!(r#"{{"messages":[{USER},{PENDING}],"id":42}}"#),
        format!(r#"{{"id":null,"x":{{"a":[1,2,{{"b":null}}]}},"messages":[{PENDING}],"y":"z"}}"#),
        format!(r#"{{"id":-1.5e3,"messages":[{PENDING}]}}"#),
        // A repeated `messages` key: the last one counts, emptier or not.
        format!(r#"{{"messages":[{PENDING}],"messages":[{USER}]}}"#),
        format!(r#"{{"messages":[{USER}],"messages":[{PENDING}]}}"#),
        format!(r#"{{"messages":[{PENDING}],"messages":[]}}"#),
        // An escaped key is the same key.
        format!(r#"{{"mess\u0061ges":[{PENDING}],"\u0069d":"t"}}"#),
        "[]".to_owned(),
        " [ ] ".to_owned(),
        r#"{"messages":[]}"#.to_owned(),
        " \n\t{ \"messages\" : [ ] }\r\n ".to_owned(),
        format!("\n[\n  {USER} ,\n  {PENDING}\n]\n\n   \t"),
        // Scalars in messages, whitespace everywhere.
        r#"[ {"role":"user","n":[0,-0.5,1e9,true,false,null,"s"]} , {} ]"#.to_owned(),
    ];
    for (i, doc) in docs.iter().enumerate() {
        every_window(&format!("doc {i}"), doc);
    }
}

#[test]
fn multibyte_utf8_and_escapes_cut_everywhere() {
    let tail = r#"{"type":"tool_call","tools":[{"callId":"é日本😀\"q\"\\x\/","name":"\u00e9\ud83d\ude00\n\t","approval":"pending","inputs":{"ключ":"値 😀","e":"\u0000\u001f"}}]}"#;
    let docs = [
        format!(
            r#"[{{"role":"user","content":"日本語 😀 é \u00e9 \ud83d\ude00 \" \\ \/ \b\f\n\r\t"}},{tail}]"#
        ),
        format!(r#"{{"id":"日本😀","messages":[{tail}],"ünïcödé":"😀😀"}}"#),
        // A lone surrogate escape reads as U+FFFD, outside the tail and in it.
        format!(r#"[{{"content":"\udd00"}},{tail}]"#),
        format!(r#"[{tail},{{"content":"\udd00"}}]"#),
        r#"[{"content":"\ud800\u0041"}]"#.to_owned(),
    ];
    for (i, doc) in docs.iter().enumerate() {
        every_window(&format!("doc {i}"), doc);
    }
}

#[test]
fn messages_and_members_larger_than_the_window() {
    let big = "x".repeat(700);
    let wide = "日本😀".repeat(60);
    let docs = [
        format!(r#"[{{"content":"{big}"}},{PENDING},{{"content":"{big}"}}]"#),
        format!(
            r#"[{USER},{{"type":"tool_call","tools":[{{"callId":"{big}","approval":"pending"}}]}}]"#
        ),
        format!(r#"{{"meta":"{big}","messages":[{PENDING}],"more":["{wide}","{big}"]}}"#),
        format!(r#"{{"messages":[{PENDING}],"after":"{big}","id":"{wide}"}}"#),
        format!(r#"{{"messages":[{USER},{{"content":"{wide}"}}]}}"#),
        format!("[{}{PENDING}]", format!("{USER},").repeat(100)),
    ];
    for (i, doc) in docs.iter().enumerate() {
        same(
            &format!("doc {i}"),
            doc.as_bytes(),
            (1..=64).chain([100, 127, 128, 500, 1000, 4096]),
        );
    }
}

#[test]
fn bad_documents_give_the_same_error() {
    let docs: Vec<Vec<u8>> = [
        "",
        " ",
        "1",
        "\"s\"",
        "null",
        "{}",
        r#"{"id":"x"}"#,
        r#"{"messages":{}}"#,
        r#"{"messages":"x"}"#,
        r#"{"messages":[1]}"#,
        r#"{"messages":[{}],"messages":3}"#,
        r#"[{},[]]"#,
        r#"[{},"x"]"#,
        r#"{"id":true,"messages":[]}"#,
        r#"{"id":[],"messages":[]}"#,
        r#"{"id":{},"messages":[]}"#,
        r#"{"messages":[{"type":"tool_call"}]}"#,
        r#"[{"type":"tool_call","tools":[{"callId":1}]}]"#,
        r#"[{"type":"tool_call","tools":[{"callId":"a","approval":"maybe"}]}]"#,
        r#"[{"role":5}]"#,
        "[]x",
        "[] ,",
        "{\"messages\":[]} }",
        "[{},]",
        "[{}}",
        "[{} {}]",
        "{\"messages\":[],}",
        "{\"messages\" []}",
        "{messages:[]}",
        "[{\"a\":01}]",
        "[{\"a\":1.}]",
        "[{\"a\":-}]",
        "[{\"a\":tru}]",
        "[{\"a\":nul}]",
        "[{\"a\":\"\\x\"}]",
        "[{\"a\":\"\\u12G4\"}]",
        "[{\"a\":\"\t\"}]",
        "[{\"a\":\"x\n\"}]",
        "\n\n  [{\"a\": 1}\n, {\"b\" 2}]",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .chain([
        // Invalid UTF-8: a bad byte, an overlong form, a surrogate, past U+10FFFF, a sequence
        // cut short inside the text and at its end, a stray continuation byte, a BOM.
        b"[{\"a\":\"\xff\"}]".to_vec(),
        b"[{\"a\":\"\xc0\x80\"}]".to_vec(),
        b"[{\"a\":\"\xed\xa0\x80\"}]".to_vec(),
        b"[{\"a\":\"\xf4\x90\x80\x80\"}]".to_vec(),
        b"[{\"a\":\"\xe6\x97\"}]".to_vec(),
        b"[{\"a\":\"x\"}] \xe6\x97".to_vec(),
        b"[{\"a\":\"x\"}]\xf0\x9f\x98".to_vec(),
        b"[{\"a\":\"\x80\"}]".to_vec(),
        b"\xef\xbb\xbf[]".to_vec(),
        b"[{\"a\":\"\xe6\x97\xa5\"},{\"b\":\"\xe6\x97\xa5\xe6\x97\"}]".to_vec(),
    ])
    .collect();
    for (i, doc) in docs.iter().enumerate() {
        let whole = pending_approvals_bytes(doc);
        assert!(whole.is_err(), "doc {i} is meant to be bad");
        same(&format!("doc {i}"), doc, 1..=doc.len() + 2);
    }
}

#[test]
fn nesting_at_and_past_the_limit() {
    // 127 nested arrays and objects are fine, a 128th is not: counted from the document's root,
    // whatever the window (a walk resumed inside the messages array starts that many levels deep).
    for containers in [125, 126, 127, 128, 129] {
        let bare = format!(
            "[{{\"a\":{}1{}}}]",
            "[".repeat(containers - 2),
            "]".repeat(containers - 2)
        );
        let object = format!(
            "{{\"messages\":[{{\"a\":{}1{}}}]}}",
            "[".repeat(containers - 3),
            "]".repeat(containers - 3)
        );
        for doc in [bare, object] {
            let whole = pending_approvals_bytes(doc.as_bytes());
            match &whole {
                Err(e) => assert!(
                    containers >= 128 && e.message.contains("recursion limit"),
                    "{containers}: {e:?}"
                ),
                Ok(_) => assert!(containers < 128, "{containers} levels read"),
            }
            same(
                &format!("{containers} levels"),
                doc.as_bytes(),
                [1, 2, 3, 7, 64, 1000],
            );
        }
        // Nested in a member before the messages (no thread either way: `id` is no string).
        let id = format!(
            "{{\"id\":{}1{},\"messages\":[]}}",
            "[".repeat(containers - 1),
            "]".repeat(containers - 1)
        );
        same(
            &format!("{containers} levels in id"),
            id.as_bytes(),
            [1, 2, 3, 7, 64, 1000],
        );
    }
}

#[test]
fn truncated_documents_give_the_same_error() {
    let doc = format!(
        "{{\"id\":\"日本\",\"messages\":[{USER},{{\"content\":\"😀 \\u00e9 \\ud83d\\ude00\"}},{PENDING}],\"x\":[1.5e-3,true]}}  "
    );
    let bytes = doc.as_bytes();
    for end in 0..bytes.len() {
        same(
            &format!("[..{end}]"),
            &bytes[..end],
            [1, 2, 3, 5, 8, 13, 40],
        );
    }
}

#[test]
fn the_fixtures_at_every_window() {
    for entry in std::fs::read_dir("tests/fixtures/neuron").unwrap() {
        let path = entry.unwrap().path();
        let doc = std::fs::read(&path).unwrap();
        let label = path.display().to_string();
        assert!(pending_approvals_bytes(&doc).is_ok(), "{label}");
        same(&label, &doc, 1..=doc.len() + 2);
    }
}

/// A thread of `n` messages of about `size` bytes each, the last a paused `tool_call`.
fn long_thread(n: usize, size: usize) -> String {
    let filler = "ab\\\"日本 ".repeat(size / 12);
    let mut doc = String::from("{\"id\":\"t\",\"messages\":[");
    for i in 0..n {
        doc.push_str(&format!(
            "{{\"__id\":\"m{i}\",\"role\":\"user\",\"content\":\"{filler}\"}},"
        ));
    }
    doc.push_str(PENDING);
    doc.push_str("]}");
    doc
}

/// Memory: on a valid document of small messages the walk never asks for a piece larger than the
/// window (what it keeps between pieces, the tail and the cut message, is smaller), reads each
/// byte once, and finds what the whole-document walk finds.
#[test]
fn pieces_stay_within_the_window() {
    let doc = long_thread(2000, 100);
    let whole = pending_approvals_bytes(doc.as_bytes()).unwrap();
    assert!(whole.suspended);
    for window in [512, 1000, 4096, 65536] {
        let (result, reads) = windowed(doc.as_bytes(), window);
        assert_eq!(result.unwrap(), whole, "window {window}");
        assert!(
            reads.iter().all(|&(_, len)| len <= window),
            "window {window}"
        );
        assert_eq!(reads.iter().map(|r| r.1).sum::<usize>(), doc.len());
    }
}

/// A message far larger than the window: the pieces grow by doubling (what is kept is read
/// again), so the number of pieces stays logarithmic in the message's size, not linear.
#[test]
fn a_huge_message_doubles_the_pieces() {
    let doc = format!(r#"[{{"content":"{}"}},{PENDING}]"#, "x".repeat(1 << 20));
    let (result, reads) = windowed(doc.as_bytes(), 64);
    assert_eq!(result, pending_approvals_bytes(doc.as_bytes()));
    assert!(reads.len() < 40, "{} pieces", reads.len());
}

/// A bad document is read whole after all, for the exact error: one more read, of everything.
#[test]
fn a_bad_document_is_read_whole_for_its_error() {
    let doc = format!("{},x", long_thread(50, 100));
    let (result, reads) = windowed(doc.as_bytes(), 256);
    assert_eq!(result, pending_approvals_bytes(doc.as_bytes()));
    assert!(result.is_err());
    assert_eq!(reads.last(), Some(&(0, doc.len())));
}
