//! Hand-written shorthands that the schema does not imply, for each revision that has the types:
//! `PromptMessage::user(..)` / `::assistant(..)`, `CallToolResult::text(..)`, and text blocks
//! from strings (`From<String>` / `From<&str>` for `TextContent` and the content unions).
//!
//! The generated modules give the rest: a `with_*` setter per optional member, `From<V>` for each
//! union of which `V` is a variant, and `ContentBlock::text(..)`-style shorthands (see
//! `xtask/src/codegen/emit.rs`). The generator refuses to take the names used here.

/// `$rev`: the revision module, behind the cargo feature `$feature`; `$prompt`: the type of `PromptMessage.content`; `$tool`: the item
/// type of `CallToolResult.content`; `$text`: every union with a `text(..)` shorthand that gets
/// `From<String>` and `From<&str>`.
macro_rules! shorthands {
    ($rev:ident, $feature:literal, prompt: $prompt:ident, tool: $tool:ident, text: [$($text:ident),*]) => {
        #[cfg(feature = $feature)]
        mod $rev {
            use crate::generated::$rev::{CallToolResult, PromptMessage, Role, TextContent};

            impl PromptMessage {
                /// A message from the user: `PromptMessage::user("Summarize the notes")`.
                pub fn user(content: impl Into<crate::generated::$rev::$prompt>) -> Self {
                    Self::new(content.into(), Role::User)
                }

                /// A message from the assistant (a prefilled answer or an earlier turn).
                pub fn assistant(content: impl Into<crate::generated::$rev::$prompt>) -> Self {
                    Self::new(content.into(), Role::Assistant)
                }
            }

            impl CallToolResult {
                /// A successful result with one text block: `CallToolResult::text("42 notes")`.
                /// A tool failure sets `is_error`: `CallToolResult::text("no such note").with_is_error(true)`.
                pub fn text(text: impl Into<String>) -> Self {
                    Self::new(vec![crate::generated::$rev::$tool::text(text)])
                }
            }

            impl From<String> for TextContent {
                fn from(text: String) -> Self {
                    TextContent::new(text)
                }
            }

            impl From<&str> for TextContent {
                fn from(text: &str) -> Self {
                    TextContent::new(text)
                }
            }

            $(
                impl From<String> for crate::generated::$rev::$text {
                    fn from(text: String) -> Self {
                        Self::text(text)
                    }
                }

                impl From<&str> for crate::generated::$rev::$text {
                    fn from(text: &str) -> Self {
                        Self::text(text)
                    }
                }
            )*
        }
    };
}

shorthands!(v2024_11_05, "v2024_11_05", prompt: PromptMessageContent, tool: CallToolResultContentItem,
    text: [PromptMessageContent, CallToolResultContentItem]);
shorthands!(v2025_03_26, "v2025_03_26", prompt: PromptMessageContent, tool: CallToolResultContentItem,
    text: [PromptMessageContent, CallToolResultContentItem]);
shorthands!(v2025_06_18, "v2025_06_18", prompt: ContentBlock, tool: ContentBlock, text: [ContentBlock]);
shorthands!(v2025_11_25, "v2025_11_25", prompt: ContentBlock, tool: ContentBlock, text: [ContentBlock]);
shorthands!(v2026_07_28, "v2026_07_28", prompt: ContentBlock, tool: ContentBlock, text: [ContentBlock]);
shorthands!(draft, "draft", prompt: ContentBlock, tool: ContentBlock, text: [ContentBlock]);
