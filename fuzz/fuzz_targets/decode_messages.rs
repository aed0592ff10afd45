//! Every top-level message type of every revision, and the params and results of the tasks and
//! skills extensions, decoded from the same bytes. Oracle: what decodes encodes, decodes again
//! to an equal value (through text and through `serde_json::Value`), and encodes to the same
//! text again. The same bytes as a result's text: what `RawResult::scan` takes, serde_json reads
//! as the same object, member by member.
#![no_main]

use std::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn round_trip<T: DeserializeOwned + Serialize + PartialEq + Debug>(name: &str, bytes: &[u8]) {
    let Ok(first) = serde_json::from_slice::<T>(bytes) else { return };
    let text = serde_json::to_string(&first).unwrap_or_else(|e| panic!("{name}: a decoded value does not encode: {e}"));
    let second: T =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: its own encoding does not decode: {e}\n{text}"));
    assert_eq!(first, second, "{name}: decode, encode, decode changed the value\n{text}");
    let again = serde_json::to_string(&second).expect("encodes");
    assert_eq!(text, again, "{name}: encoding is not stable");
    // serde_json's `Value` (no `arbitrary_precision`) keeps a number only as an `i64`, a `u64` or
    // the nearest `f64`: a literal it writes differently (`6.000`, an integer beyond 64 bits,
    // `1e400`, all kept by `Integer`) cannot come back through it unchanged. Then what comes back
    // must encode to that same `Value`.
    let numbers = numbers_through_a_value(&text);
    let value = match serde_json::to_value(&first) {
        Ok(value) => value,
        Err(_) if numbers == ThroughAValue::NotHeld => return,
        Err(e) => panic!("{name}: a decoded value does not encode to a Value: {e}\n{text}"),
    };
    let third: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{name}: its encoding does not decode from a Value: {e}\n{text}"));
    if numbers != ThroughAValue::Same {
        let again = serde_json::to_value(&third).expect("what came from a Value encodes to one");
        assert_eq!(value, again, "{name}: decoding from a Value and encoding changed the Value\n{text}");
    } else {
        assert_eq!(first, third, "{name}: decoding from a Value changed the value\n{text}");
    }
}

/// How the numbers of a JSON text fare in serde_json's `Value`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ThroughAValue {
    /// Each is written back as it was.
    Same,
    /// One at least is held under another spelling (`6.000` as `6.0`).
    Respelled,
    /// One at least cannot be held (`1e400`).
    NotHeld,
}

fn numbers_through_a_value(text: &str) -> ThroughAValue {
    let (bytes, mut at, mut in_string) = (text.as_bytes(), 0, false);
    let mut worst = ThroughAValue::Same;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if in_string => at += 1,
            b'"' => in_string = !in_string,
            b'-' | b'0'..=b'9' if !in_string => {
                let start = at;
                while at < bytes.len() && matches!(bytes[at], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    at += 1;
                }
                let number = &text[start..at];
                let fate = match serde_json::from_str::<serde_json::Value>(number) {
                    Ok(value) if value.to_string() == number => ThroughAValue::Same,
                    Ok(_) => ThroughAValue::Respelled,
                    Err(_) => ThroughAValue::NotHeld,
                };
                worst = worst.max(fate);
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    worst
}

macro_rules! all_types {
    ($($revision:ident: [$($ty:ty),* $(,)?];)*) => {
        fn decode_everywhere(bytes: &[u8]) {
            $($(
                round_trip::<$ty>(concat!(stringify!($revision), "::", stringify!($ty)), bytes);
            )*)*
        }
    };
}

all_types! {
    v2024_11_05: [
        mcp_types::v2024_11_05::JsonRpcMessage, mcp_types::v2024_11_05::JsonRpcRequest,
        mcp_types::v2024_11_05::JsonRpcNotification, mcp_types::v2024_11_05::JsonRpcResponse,
        mcp_types::v2024_11_05::JsonRpcError, mcp_types::v2024_11_05::ClientRequest,
        mcp_types::v2024_11_05::ClientNotification, mcp_types::v2024_11_05::ClientResult,
        mcp_types::v2024_11_05::ServerRequest, mcp_types::v2024_11_05::ServerNotification,
        mcp_types::v2024_11_05::ServerResult,
    ];
    v2025_03_26: [
        mcp_types::v2025_03_26::JsonRpcMessage, mcp_types::v2025_03_26::JsonRpcRequest,
        mcp_types::v2025_03_26::JsonRpcNotification, mcp_types::v2025_03_26::JsonRpcResponse,
        mcp_types::v2025_03_26::JsonRpcError, mcp_types::v2025_03_26::JsonRpcBatchRequestItem,
        mcp_types::v2025_03_26::JsonRpcBatchResponseItem, Vec<mcp_types::v2025_03_26::JsonRpcBatchRequestItem>,
        Vec<mcp_types::v2025_03_26::JsonRpcBatchResponseItem>, mcp_types::v2025_03_26::ClientRequest,
        mcp_types::v2025_03_26::ClientNotification, mcp_types::v2025_03_26::ClientResult,
        mcp_types::v2025_03_26::ServerRequest, mcp_types::v2025_03_26::ServerNotification,
        mcp_types::v2025_03_26::ServerResult,
    ];
    v2025_06_18: [
        mcp_types::v2025_06_18::JsonRpcMessage, mcp_types::v2025_06_18::JsonRpcRequest,
        mcp_types::v2025_06_18::JsonRpcNotification, mcp_types::v2025_06_18::JsonRpcResponse,
        mcp_types::v2025_06_18::JsonRpcError, mcp_types::v2025_06_18::ClientRequest,
        mcp_types::v2025_06_18::ClientNotification, mcp_types::v2025_06_18::ClientResult,
        mcp_types::v2025_06_18::ServerRequest, mcp_types::v2025_06_18::ServerNotification,
        mcp_types::v2025_06_18::ServerResult,
    ];
    v2025_11_25: [
        mcp_types::v2025_11_25::JsonRpcMessage, mcp_types::v2025_11_25::JsonRpcRequest,
        mcp_types::v2025_11_25::JsonRpcNotification, mcp_types::v2025_11_25::JsonRpcResponse,
        mcp_types::v2025_11_25::JsonRpcResultResponse, mcp_types::v2025_11_25::JsonRpcErrorResponse,
        mcp_types::v2025_11_25::ClientMessage, mcp_types::v2025_11_25::ServerMessage,
        mcp_types::v2025_11_25::ClientRequest, mcp_types::v2025_11_25::ClientNotification,
        mcp_types::v2025_11_25::ClientResult, mcp_types::v2025_11_25::ServerRequest,
        mcp_types::v2025_11_25::ServerNotification, mcp_types::v2025_11_25::ServerResult,
    ];
    v2026_07_28: [
        mcp_types::v2026_07_28::JsonRpcMessage, mcp_types::v2026_07_28::JsonRpcRequest,
        mcp_types::v2026_07_28::JsonRpcNotification, mcp_types::v2026_07_28::JsonRpcResponse,
        mcp_types::v2026_07_28::JsonRpcResultResponse, mcp_types::v2026_07_28::JsonRpcErrorResponse,
        mcp_types::v2026_07_28::ClientMessage, mcp_types::v2026_07_28::ServerMessage,
        mcp_types::v2026_07_28::ClientRequest, mcp_types::v2026_07_28::ClientNotification,
        mcp_types::v2026_07_28::ServerNotification, mcp_types::v2026_07_28::ServerResult,
    ];
    draft: [
        mcp_types::draft::JsonRpcMessage, mcp_types::draft::JsonRpcRequest,
        mcp_types::draft::JsonRpcNotification, mcp_types::draft::JsonRpcResponse,
        mcp_types::draft::JsonRpcResultResponse, mcp_types::draft::JsonRpcErrorResponse,
        mcp_types::draft::ClientMessage, mcp_types::draft::ServerMessage,
        mcp_types::draft::ClientRequest, mcp_types::draft::ClientNotification,
        mcp_types::draft::ServerNotification, mcp_types::draft::ServerResult,
    ];
    extensions: [
        mcp_types::ext::tasks::CreateTaskResult, mcp_types::ext::tasks::GetTaskResult,
        mcp_types::ext::tasks::UpdateTaskResult, mcp_types::ext::tasks::GetTaskRequestParams,
        mcp_types::ext::tasks::UpdateTaskRequestParams, mcp_types::ext::tasks::TaskStatusNotificationParams,
        mcp_types::ext::tasks::DetailedTask, mcp_types::ext::tasks::GetTaskRequest,
        mcp_types::ext::tasks::UpdateTaskRequest, mcp_types::ext::tasks::TaskStatusNotification,
        mcp_types::ext::skills::ListSkillsRequestParams, mcp_types::ext::skills::ListSkillsResult,
        mcp_types::ext::skills::GetSkillRequestParams, mcp_types::ext::skills::GetSkillResult,
        mcp_types::ext::skills::ReadResourceDirectoryRequestParams,
        mcp_types::ext::skills::ReadResourceDirectoryResult,
    ];
}

/// `RawResult::scan` takes only what serde_json reads as one object, and finds the members it
/// reads: each name as written, each value's text the same value.
fn scan_agrees(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Some(scanned) = mcp_types::RawResult::scan(text) else { return };
    let read = match serde_json::from_str::<RawMembers>(text) {
        Ok(RawMembers(read)) => read,
        Err(e) => panic!("the scan took what serde_json refuses ({e}): {text}"),
    };
    let members: Vec<(&str, &str)> = scanned.members().expect("a scanned result has members").collect();
    assert_eq!(members.len(), read.len(), "{text}");
    for ((name, value), (want_name, want_value)) in members.iter().zip(&read) {
        assert_eq!(name, want_name, "{text}");
        assert_eq!(*value, want_value.get(), "{text}");
    }
    assert_eq!(
        serde_json::to_string(&scanned).expect("a scanned result encodes"),
        text.trim_matches([' ', '\t', '\n', '\r'])
    );
}

/// An object's members in order, duplicates kept, each value's text as written.
struct RawMembers(Vec<(String, Box<serde_json::value::RawValue>)>);

impl<'de> serde::Deserialize<'de> for RawMembers {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = RawMembers;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawMembers, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(RawMembers(members))
            }
        }
        d.deserialize_map(Members)
    }
}

fuzz_target!(|data: &[u8]| {
    decode_everywhere(data);
    scan_agrees(data);
});
