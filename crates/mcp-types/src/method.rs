//! The traits that tie a method name to its params and result.

/// A request method, in the style of `lsp-types`: the method name, its params and its result.
///
/// Implemented by every request type of every revision, so that a caller can decode a response by
/// the method it sent: `serde_json::from_value::<<CallToolRequest as Request>::Result>(result)`.
pub trait Request {
    /// The method name, as sent on the wire (`"tools/call"`).
    const METHOD: &'static str;
    /// The type of the request's `params`.
    type Params: serde::Serialize + serde::de::DeserializeOwned;
    /// The type of the response's `result`.
    type Result: serde::Serialize + serde::de::DeserializeOwned;
}

/// A notification method: its name and its params.
pub trait Notification {
    /// The method name, as sent on the wire (`"notifications/progress"`).
    const METHOD: &'static str;
    /// The type of the notification's `params`.
    type Params: serde::Serialize + serde::de::DeserializeOwned;
}
