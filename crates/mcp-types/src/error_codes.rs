//! JSON-RPC and MCP error codes (`basic/index.mdx` § Error Codes).

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available (HTTP 404 on Streamable HTTP).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters, including missing required `_meta` members and unknown resources.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// An HTTP header is missing, malformed, or disagrees with the body (2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;
/// The request needs a client capability the request did not declare (2026-07-28).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// The requested protocol version is not supported (2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// Retired "resource not found" of 2025-11-25 and older; clients should still accept it.
pub const RESOURCE_NOT_FOUND_LEGACY: i64 = -32002;
/// Retired "URL elicitation required" of 2025-11-25.
pub const URL_ELICITATION_REQUIRED_LEGACY: i64 = -32042;
