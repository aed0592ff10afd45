//! Official MCP extensions: their identifiers, and (each behind its own cargo feature) their
//! messages.
//!
//! Where an extension publishes a JSON schema (tasks, MCP Apps), `cargo xtask codegen` generates
//! its types like a revision's, from the file pinned in `schema/pins.toml`.
//!
//! An extension is declared under `capabilities.extensions["<id>"]`, by the client per request
//! (in `_meta["io.modelcontextprotocol/clientCapabilities"]`) and by the server in
//! `server/discover`. An extension that publishes no schema (skills) is written by hand from its
//! specification (the module says which commit), with serde derive; unknown members survive
//! decode → encode through an `extra` map, like the generated types.
//!
//! | id | module | feature |
//! |---|---|---|
//! | [`TASKS`] `io.modelcontextprotocol/tasks` | [`tasks`] | `ext-tasks` |
//! | [`SKILLS`] `io.modelcontextprotocol/skills` | [`skills`] | `ext-skills` |
//! | [`APPS`] `io.modelcontextprotocol/ui` | [`apps`] | `ext-apps` |
//!
//! The helpers here are what every extension needs: [`declares`] (did the client declare it),
//! [`client_capabilities`] (the capabilities object that declares it, for requests and for the
//! `requiredCapabilities` of a `-32021` error), [`ExtRequest`] and [`ExtNotification`] (the
//! JSON-RPC envelopes of an extension's methods).
//!

// A module whose feature is off links to the crate's feature list instead (default-features docs).
#![cfg_attr(feature = "ext-tasks", doc = "[`tasks`]: self::tasks")]
#![cfg_attr(not(feature = "ext-tasks"), doc = "[`tasks`]: crate#cargo-features")]
#![cfg_attr(feature = "ext-skills", doc = "[`skills`]: self::skills")]
#![cfg_attr(not(feature = "ext-skills"), doc = "[`skills`]: crate#cargo-features")]
#![cfg_attr(feature = "v2026_07_28", doc = "[`declares`]: self::declares")]
#![cfg_attr(not(feature = "v2026_07_28"), doc = "[`declares`]: crate#cargo-features")]
#![cfg_attr(feature = "v2026_07_28", doc = "[`client_capabilities`]: self::client_capabilities")]
#![cfg_attr(not(feature = "v2026_07_28"), doc = "[`client_capabilities`]: crate#cargo-features")]
#![cfg_attr(feature = "ext-apps", doc = "[`apps`]: self::apps")]
#![cfg_attr(not(feature = "ext-apps"), doc = "[`apps`]: crate#cargo-features")]

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::common::RequestId;
use crate::free_form::JsonObject;

/// `io.modelcontextprotocol/tasks`: asynchronous tool calls (SEP-2663).
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

#[cfg(feature = "ext-tasks")]
pub mod tasks;

/// `io.modelcontextprotocol/skills`: skills served as resources (SEP-2640).
pub const SKILLS: &str = "io.modelcontextprotocol/skills";

#[cfg(feature = "ext-skills")]
pub mod skills;

/// `io.modelcontextprotocol/ui`: MCP Apps, interactive HTML interfaces of tools (SEP-1865).
pub const APPS: &str = "io.modelcontextprotocol/ui";

#[cfg(feature = "ext-apps")]
pub mod apps;

/// Whether `capabilities` declare the extension `id` (any settings, `{}` included).
#[cfg(feature = "v2026_07_28")]
pub fn declares(capabilities: &crate::generated::v2026_07_28::ClientCapabilities, id: &str) -> bool {
    capabilities.extensions.as_ref().is_some_and(|extensions| extensions.contains_key(id))
}

/// Client capabilities that declare the extension `id` with no settings, and nothing else.
#[cfg(feature = "v2026_07_28")]
pub fn client_capabilities(id: &str) -> crate::generated::v2026_07_28::ClientCapabilities {
    crate::generated::v2026_07_28::ClientCapabilities {
        extensions: Some([(id.to_owned(), JsonObject::new())].into()),
        ..Default::default()
    }
}

/// A JSON-RPC request of an extension method: `{"jsonrpc":"2.0","id":…,"method":M::METHOD,"params":…}`.
///
/// `M` is a marker naming the method (see [`ExtMethod`]); each extension module gives the
/// concrete requests names (`tasks::GetTaskRequest`, …) and implements [`crate::Request`] for them.
pub struct ExtRequest<M: ExtMethod> {
    /// The JSON-RPC id of the request.
    pub id: RequestId,
    /// The method's params.
    pub params: M::Params,
    /// Members the envelope does not define, kept for re-encoding.
    pub extra: JsonObject,
    method: PhantomData<M>,
}

/// A JSON-RPC notification of an extension: `{"jsonrpc":"2.0","method":M::METHOD,"params":…}`.
pub struct ExtNotification<M: ExtMethod> {
    /// The method's params.
    pub params: M::Params,
    /// Members the envelope does not define, kept for re-encoding.
    pub extra: JsonObject,
    method: PhantomData<M>,
}

/// A method (or notification) name and its params: what [`ExtRequest`] and [`ExtNotification`]
/// need to encode and check an envelope.
pub trait ExtMethod {
    /// The method name, as sent on the wire.
    const METHOD: &'static str;
    /// The type of the `params` member.
    type Params: Serialize + DeserializeOwned;
}

/// A request method: an [`ExtMethod`] with a result. `ExtRequest<M>` implements [`crate::Request`].
pub trait ExtRequestMethod: ExtMethod {
    /// The type of the response's `result`.
    type Result: Serialize + DeserializeOwned;
}

impl<M: ExtMethod> ExtRequest<M> {
    /// The `method` member every such request carries.
    pub const METHOD: &'static str = M::METHOD;

    /// A request with this id and params.
    pub fn new(id: impl Into<RequestId>, params: M::Params) -> Self {
        ExtRequest { id: id.into(), params, extra: JsonObject::new(), method: PhantomData }
    }
}

impl<M: ExtMethod> ExtNotification<M> {
    /// The `method` member every such notification carries.
    pub const METHOD: &'static str = M::METHOD;

    /// A notification with these params.
    pub fn new(params: M::Params) -> Self {
        ExtNotification { params, extra: JsonObject::new(), method: PhantomData }
    }
}

impl<M: ExtRequestMethod> crate::method::Request for ExtRequest<M> {
    const METHOD: &'static str = M::METHOD;
    type Params = M::Params;
    type Result = M::Result;
}

impl<M: ExtMethod> crate::method::Notification for ExtNotification<M> {
    const METHOD: &'static str = M::METHOD;
    type Params = M::Params;
}

#[derive(Serialize)]
struct EnvelopeOut<'a, P> {
    jsonrpc: &'static str,
    method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    params: &'a P,
    #[serde(flatten)]
    extra: &'a JsonObject,
}

#[derive(Deserialize)]
struct EnvelopeIn<P> {
    jsonrpc: String,
    method: String,
    #[serde(default)]
    id: Option<RequestId>,
    params: P,
    #[serde(flatten)]
    extra: JsonObject,
}

impl<P> EnvelopeIn<P> {
    fn check<E: serde::de::Error>(&self, method: &str) -> Result<(), E> {
        if self.jsonrpc != "2.0" {
            return Err(E::custom(format_args!("`jsonrpc` must be \"2.0\", found {:?}", self.jsonrpc)));
        }
        if self.method != method {
            return Err(E::custom(format_args!("expected the method `{method}`, found `{}`", self.method)));
        }
        Ok(())
    }
}

impl<M: ExtMethod> Serialize for ExtRequest<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let out = EnvelopeOut {
            jsonrpc: "2.0",
            method: M::METHOD,
            id: Some(&self.id),
            params: &self.params,
            extra: &self.extra,
        };
        out.serialize(s)
    }
}

impl<'de, M: ExtMethod> Deserialize<'de> for ExtRequest<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let envelope = EnvelopeIn::<M::Params>::deserialize(d)?;
        envelope.check(M::METHOD)?;
        let id = envelope.id.ok_or_else(|| serde::de::Error::custom(format_args!("{} needs an `id`", M::METHOD)))?;
        Ok(ExtRequest { id, params: envelope.params, extra: envelope.extra, method: PhantomData })
    }
}

impl<M: ExtMethod> Serialize for ExtNotification<M> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        EnvelopeOut { jsonrpc: "2.0", method: M::METHOD, id: None, params: &self.params, extra: &self.extra }
            .serialize(s)
    }
}

impl<'de, M: ExtMethod> Deserialize<'de> for ExtNotification<M> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let envelope = EnvelopeIn::<M::Params>::deserialize(d)?;
        envelope.check(M::METHOD)?;
        if envelope.id.is_some() {
            return Err(serde::de::Error::custom(format_args!("the notification {} must not have an `id`", M::METHOD)));
        }
        Ok(ExtNotification { params: envelope.params, extra: envelope.extra, method: PhantomData })
    }
}

impl<M: ExtMethod> fmt::Debug for ExtRequest<M>
where
    M::Params: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtRequest")
            .field("method", &M::METHOD)
            .field("id", &self.id)
            .field("params", &self.params)
            .field("extra", &self.extra)
            .finish()
    }
}

impl<M: ExtMethod> fmt::Debug for ExtNotification<M>
where
    M::Params: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtNotification")
            .field("method", &M::METHOD)
            .field("params", &self.params)
            .field("extra", &self.extra)
            .finish()
    }
}

impl<M: ExtMethod> Clone for ExtRequest<M>
where
    M::Params: Clone,
{
    fn clone(&self) -> Self {
        ExtRequest { id: self.id.clone(), params: self.params.clone(), extra: self.extra.clone(), method: PhantomData }
    }
}

impl<M: ExtMethod> Clone for ExtNotification<M>
where
    M::Params: Clone,
{
    fn clone(&self) -> Self {
        ExtNotification { params: self.params.clone(), extra: self.extra.clone(), method: PhantomData }
    }
}

impl<M: ExtMethod> PartialEq for ExtRequest<M>
where
    M::Params: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.params == other.params && self.extra == other.extra
    }
}

impl<M: ExtMethod> PartialEq for ExtNotification<M>
where
    M::Params: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params && self.extra == other.extra
    }
}

/// Declares the marker of one extension request method and names its envelope.
#[allow(unused_macros)]
macro_rules! ext_request {
    ($(#[$doc:meta])* $marker:ident => $name:ident, $method:literal, $params:ty, $result:ty) => {
        #[doc = concat!("The method `", $method, "`: the marker type of [`", stringify!($name), "`].")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $marker {}

        impl $crate::ext::ExtMethod for $marker {
            const METHOD: &'static str = $method;
            type Params = $params;
        }

        impl $crate::ext::ExtRequestMethod for $marker {
            type Result = $result;
        }

        $(#[$doc])*
        pub type $name = $crate::ext::ExtRequest<$marker>;
    };
}

/// Declares the marker of one extension notification and names its envelope.
#[allow(unused_macros)]
macro_rules! ext_notification {
    ($(#[$doc:meta])* $marker:ident => $name:ident, $method:literal, $params:ty) => {
        #[doc = concat!("The notification `", $method, "`: the marker type of [`", stringify!($name), "`].")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $marker {}

        impl $crate::ext::ExtMethod for $marker {
            const METHOD: &'static str = $method;
            type Params = $params;
        }

        $(#[$doc])*
        pub type $name = $crate::ext::ExtNotification<$marker>;
    };
}

#[allow(unused_imports)]
pub(crate) use {ext_notification, ext_request};
