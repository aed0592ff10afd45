//! Which era `era = "auto"` speaks to an upstream: the 2026-07-28 one when the upstream offers
//! it, unless the upstream then shows that it cannot ask its caller anything in it.
//!
//! Some servers speak both eras but can send elicitation, sampling and roots requests only in
//! the legacy one: the Python SDK (PyPI `mcp` 2.3.0), asked to run a tool that calls
//! `ctx.elicit` in the 2026-07-28 era, answers the call with `-32600` "Cannot send
//! 'elicitation/create': this transport context has no back-channel for server-initiated
//! requests." Nothing in its `server/discover` tells this beforehand (it lists `2026-07-28`
//! alone, and the same tools in either era), and no probe could find it without running one of
//! its tools. So the gateway decides on the first such refusal: it checks that the upstream
//! speaks the legacy era (a handshake on a connection of its own), makes that the upstream's
//! era from then on (until the gateway restarts; logged once, with the reason), and sends the
//! refused request again, once, in the legacy era. The refusal came where the tool asked, so
//! what the tool did before asking is done again: the price of a server that cannot say what
//! it will ask before it runs. Only that refusal is retried; any other error is the caller's.

use mcp_client::Error;
use mcp_types::error_codes::INVALID_REQUEST;

/// What a server sends its client while serving a request, and which the 2026-07-28 era carries
/// as input requests instead.
const INPUT_METHODS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

/// The request `error` says the upstream could not send to its client while serving the call:
/// a JSON-RPC `-32600` whose message names `elicitation/create`, `sampling/createMessage` or
/// `roots/list` (the Python SDK's `NoBackChannelError`). `None` for any other error.
pub(crate) fn refused_input(error: &Error) -> Option<&'static str> {
    let Error::Rpc { error, .. } = error else { return None };
    if error.code != INVALID_REQUEST {
        return None;
    }
    INPUT_METHODS.into_iter().find(|method| error.message.contains(method))
}

/// The error of an upstream pinned to the 2026-07-28 era (`era = "modern"`) that refused to
/// send `asked` in it: the gateway's configuration is what has to change, so the caller gets
/// `-32603` saying so, with the upstream's own words.
pub(crate) fn pinned_modern(upstream: &str, asked: &str, error: &Error) -> mcp_server::Error {
    let said = match error {
        Error::Rpc { error, .. } => error.message.as_str(),
        _ => "",
    };
    mcp_server::Error::internal(format!(
        "upstream `{upstream}` cannot send `{asked}` in the 2026-07-28 era, the only one its \
         `era = \"modern\"` allows (it answered: {said}); set `era = \"auto\"` or `era = \"legacy\"` \
         for it in the gateway's configuration"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_types::ErrorObject;

    fn rpc(code: i64, message: &str) -> Error {
        Error::Rpc { method: "tools/call".into(), error: ErrorObject::new(code, message), http_status: Some(400) }
    }

    #[test]
    fn only_a_refusal_to_ask_the_client_is_one() {
        let python = "Cannot send 'elicitation/create': this transport context has no back-channel for \
                      server-initiated requests.";
        assert_eq!(refused_input(&rpc(-32600, python)), Some("elicitation/create"));
        let sampling = python.replace("elicitation/create", "sampling/createMessage");
        assert_eq!(refused_input(&rpc(-32600, &sampling)), Some("sampling/createMessage"));
        let roots = python.replace("elicitation/create", "roots/list");
        assert_eq!(refused_input(&rpc(-32600, &roots)), Some("roots/list"));
        // Another code, another request, or no JSON-RPC error at all: the tool's own failure.
        assert_eq!(refused_input(&rpc(-32603, python)), None);
        assert_eq!(refused_input(&rpc(-32600, "Cannot send 'tools/call'")), None);
        assert_eq!(refused_input(&Error::Protocol(python.into())), None);
    }
}
