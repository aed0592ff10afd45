//! The Rust type expressions the model gives members and variants, below both the model and
//! the corrections it applies.

/// A Rust type expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    String,
    Bool,
    /// `serde_json::Number`: keeps `50` as `50` and `0.5` as `0.5`.
    Number,
    Value,
    /// `serde_json::Map<String, Value>`.
    Object,
    Vec(Box<Ty>),
    /// `BTreeMap<String, T>`.
    Map(Box<Ty>),
    /// A type generated into this module.
    Named(String),
    /// A hand-written type of the crate (`crate::RequestId`).
    Path(&'static str),
    /// A generated type kept on the heap (`Box<T>`): see [`super::corrections::boxed`].
    Boxed(Box<Ty>),
}
