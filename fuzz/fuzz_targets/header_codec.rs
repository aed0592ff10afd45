//! The Streamable HTTP header rules (`mcp_types::http_headers`).
//!
//! Oracle: any text encodes to a header-safe value that decodes back to it; a received value
//! that decodes re-encodes to a value decoding to the same text; for any schema whose
//! `x-mcp-header` annotations are valid and any arguments (the input as JSON
//! `{"schema": …, "arguments": …}`), every `Mcp-Param-*` header rendered has a valid name and
//! decodes to the rendered argument.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_types::http_headers::{
    decode_value, encode_value, header_params, is_mirrored_header, param_headers, render_argument,
};
use serde_json::Value;

fn header_safe(value: &str) -> bool {
    value.bytes().all(|b| (0x21..=0x7e).contains(&b) || b == b' ' || b == b'\t')
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let encoded = encode_value(&text);
    assert!(header_safe(&encoded), "not header-safe: {encoded:?}");
    assert_eq!(decode_value(&encoded).as_deref(), Ok(&*text), "{encoded:?}");
    if let Ok(decoded) = decode_value(&text) {
        assert_eq!(decode_value(&encode_value(&decoded)), Ok(decoded));
    }
    let _ = is_mirrored_header(&text);

    let Ok(document) = serde_json::from_slice::<Value>(data) else { return };
    let schema = document.get("schema").unwrap_or(&document);
    let Ok(params) = header_params(schema) else { return };
    let arguments = document.get("arguments").and_then(Value::as_object);
    for (name, value) in param_headers(&params, arguments) {
        assert!(is_mirrored_header(&name), "{name}");
        assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)), "{name}");
        assert!(header_safe(&value), "{name}: {value:?}");
        let param = params.iter().find(|p| p.header_name() == name).expect("a header of a known parameter");
        let argument = param.argument(arguments.expect("headers need arguments")).expect("a present argument");
        let rendered = render_argument(argument).expect("rendered");
        assert_eq!(decode_value(&value).as_deref(), Ok(&*rendered), "{name}");
    }
});
