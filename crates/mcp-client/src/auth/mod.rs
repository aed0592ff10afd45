//! OAuth 2.1 authorization for the HTTP transports (feature `auth`), as the MCP authorization
//! specification describes it.
//!
//! Attach an [`OAuth`] with [`ClientBuilder::oauth`](crate::ClientBuilder::oauth): every HTTP
//! request then carries `Authorization: Bearer …`, and a 401, or a 403 with
//! `error="insufficient_scope"`, turns into a token and a retry of the same request,
//! transparently to the caller. It does so as a tower layer over the client's HTTP service
//! ([`OAuth::layer`], the innermost of the [`layer`](crate::layer) stack), and depends on
//! neither the transports nor the protocol core:
//!
//! 1. Protected Resource Metadata (RFC 9728): the challenge's `resource_metadata`, else the
//!    path-based well-known URL, then the root one. Its `resource` must name the server (same
//!    origin, path prefix), or the client stops ([`AuthError::ResourceMismatch`]).
//! 2. Authorization server metadata (RFC 8414, OpenID discovery) in the specification's order;
//!    a document whose `issuer` is not exactly the issuer is not used. The issuer is the first
//!    the PRM lists, or the one pinned with [`OAuthBuilder::authorization_server`] (a PRM that
//!    does not list it is refused before any request to another server).
//! 3. Client identity: pre-registered credentials, else a Client ID Metadata Document URL when
//!    the server supports them, else Dynamic Client Registration (per issuer, so a new
//!    authorization server means a new registration).
//! 4. Authorization code with PKCE S256, `state`, and `resource` (the PRM string, byte for
//!    byte); the `iss` response parameter (RFC 9207) is compared by plain string equality
//!    before the code is exchanged.
//! 5. Scopes: the challenge's, else the PRM `scopes_supported`, else none, plus those already
//!    granted (step-up) and `offline_access` when the authorization server lists it. At most
//!    three authorizations per request (one with a token exchange), then
//!    [`AuthError::TooManyAuthorizationAttempts`].
//!    Refresh tokens are used before asking the user again.
//!
//! Extensions (each replaces step 4 after the same discovery, and runs on a 401 the same way):
//!
//! * [`OAuthBuilder::client_credentials`]: the client credentials grant (SEP-1046) as the
//!   pre-registered client, with its secret (Basic or in the body) or, with
//!   [`OAuthBuilder::client_key`], an ES256 `private_key_jwt` assertion whose audience is the
//!   issuer (RFC 7523).
//! * [`OAuthBuilder::enterprise_managed`]: enterprise-managed authorization (SEP-990), the
//!   user's ID token exchanged at the enterprise IdP (RFC 8693) for an ID-JAG, presented with
//!   the JWT bearer grant.
//! * [`OAuthBuilder::token_exchange`]: OAuth 2.0 Token Exchange (RFC 8693), for a server that
//!   acts as its caller (a gateway): the caller's access token ([`SubjectToken`]) is exchanged
//!   at the authorization server, as the pre-registered client, for a token of this server;
//!   the caller's token itself is never sent to the server.
//! * [`OAuthBuilder::jwt_bearer`]: the JWT bearer grant with a workload identity token
//!   (SEP-1933); one request, an error is returned, never retried with another grant.
//! * [`OAuthBuilder::dpop`] / [`OAuthBuilder::dpop_key`]: DPoP (RFC 9449, SEP-1932) with any
//!   grant. Token requests carry a proof; a DPoP-bound token is sent as
//!   `Authorization: DPoP …` with a fresh proof (`htm`, `htu`, `ath`) on every request (POST,
//!   GET streams, DELETE). A server's `use_dpop_nonce` demand, at the authorization server or
//!   the MCP server, is answered by resending once with its nonce, which is then kept for that
//!   origin. Left unset, DPoP is turned on for a server whose Protected Resource Metadata says
//!   `dpop_bound_access_tokens_required`.
//!
//! The `oauth2` crate was not used: it has no RFC 9728/8414 discovery or RFC 9207 `iss` check,
//! and it is built on another reqwest major version.
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_client::Error> {
//! use mcp_client::Client;
//! use mcp_client::auth::{LoopbackAuthorizer, OAuth};
//!
//! let authorizer = LoopbackAuthorizer::new(8976, |url| {
//!     println!("Open {url} in your browser to authorize.");
//!     Ok(())
//! });
//! let oauth = OAuth::builder().client_name("my-app").authorizer(authorizer).build();
//! let client = Client::builder("my-app", "1.0.0").oauth(oauth).connect_http("https://example.com/mcp").await?;
//! # Ok(()) }
//! ```

mod authorizer;
mod discovery;
mod error;
mod fetch;
mod flow;
mod grants;
mod jose;
mod oauth;
mod service;
mod store;

pub use authorizer::{Authorizer, HeadlessAuthorizer, LoopbackAuthorizer};
pub use error::AuthError;
pub use jose::{Es256Key, JoseError};
pub use oauth::{OAuth, OAuthBuilder, SubjectToken};
pub use service::{OAuthLayer, OAuthService};
pub use store::{ClientRegistration, InMemoryTokenStore, Secret, StoredTokens, TokenEndpointAuthMethod, TokenStore};
