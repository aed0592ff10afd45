//! The token endpoint: every grant and every client authentication goes through
//! [`OAuth::token_request`], which also adds the DPoP proof (RFC 9449) and answers a
//! `use_dpop_nonce` once. Besides the authorization code and refresh grants of the core flow,
//! the grants that need no user:
//!
//! * `client_credentials` (RFC 6749 §4.4, MCP extension SEP-1046), the client authenticating
//!   with a secret or an ES256 `private_key_jwt` assertion (RFC 7523 §2.2);
//! * enterprise-managed authorization (SEP-990): RFC 8693 token exchange of the user's ID token
//!   at the enterprise IdP for an Identity Assertion JWT Authorization Grant (ID-JAG), then the
//!   RFC 7523 JWT bearer grant with it at the authorization server;
//! * the JWT bearer grant with a workload identity token (SEP-1933);
//! * RFC 8693 token exchange of the access token of the party the client acts for, for an
//!   access token of the resource, at the resource's own authorization server.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::ACCEPT;
use serde::Deserialize;
use url::Url;

use super::error::AuthError;
use super::fetch::{endpoint_url, read_text};
use super::jose::{self, Es256Key};
use super::oauth::{OAuth, Session, Unattended};
use super::store::{ClientRegistration, Secret, StoredTokens, TokenEndpointAuthMethod};

const GRANT_JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_TYPE_ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const GRANT_TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const TOKEN_TYPE_ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";

/// A way to get tokens at a token endpoint.
pub(crate) enum Grant {
    AuthorizationCode {
        code: Secret,
        verifier: Secret,
        redirect_uri: String,
    },
    RefreshToken {
        refresh_token: Secret,
    },
    ClientCredentials,
    /// RFC 8693 at the enterprise IdP: the ID token for an ID-JAG aimed at the session's issuer.
    TokenExchange {
        idp_token_endpoint: Url,
        id_token: Secret,
    },
    /// RFC 7523 §2.1: an ID-JAG or a workload identity token.
    JwtBearer {
        assertion: Secret,
    },
    /// RFC 8693 at the session's issuer: another party's access token for one of the resource.
    AccessTokenExchange {
        subject_token: Secret,
    },
}

impl Grant {
    /// The grant's parameters; `scope` only for the grants that have no other way to say it.
    fn params(&self, session: &Session, scopes: &[String]) -> Vec<(&'static str, String)> {
        let mut params = match self {
            Grant::AuthorizationCode { code, verifier, redirect_uri } => {
                return vec![
                    ("grant_type", "authorization_code".into()),
                    ("code", code.expose().to_owned()),
                    ("code_verifier", verifier.expose().to_owned()),
                    ("redirect_uri", redirect_uri.clone()),
                ];
            }
            Grant::RefreshToken { refresh_token } => {
                return vec![
                    ("grant_type", "refresh_token".into()),
                    ("refresh_token", refresh_token.expose().to_owned()),
                ];
            }
            Grant::ClientCredentials => vec![("grant_type", "client_credentials".into())],
            Grant::TokenExchange { id_token, .. } => vec![
                ("grant_type", GRANT_TOKEN_EXCHANGE.into()),
                ("requested_token_type", TOKEN_TYPE_ID_JAG.into()),
                ("audience", session.issuer.clone()),
                ("subject_token", id_token.expose().to_owned()),
                ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token".into()),
            ],
            Grant::JwtBearer { assertion } => {
                vec![("grant_type", GRANT_JWT_BEARER.into()), ("assertion", assertion.expose().to_owned())]
            }
            // `resource` is added with every grant's.
            Grant::AccessTokenExchange { subject_token } => vec![
                ("grant_type", GRANT_TOKEN_EXCHANGE.into()),
                ("requested_token_type", TOKEN_TYPE_ACCESS_TOKEN.into()),
                ("audience", session.resource.clone()),
                ("subject_token", subject_token.expose().to_owned()),
                ("subject_token_type", TOKEN_TYPE_ACCESS_TOKEN.into()),
            ],
        };
        if !scopes.is_empty() {
            params.push(("scope", scopes.join(" ")));
        }
        params
    }
}

/// How the client authenticates at a token endpoint.
#[derive(Debug, Clone)]
pub(crate) enum ClientAuth {
    /// A public client: `client_id` in the body, when there is one.
    None { client_id: Option<String> },
    /// HTTP Basic with the form-encoded id and secret (RFC 6749 §2.3.1).
    SecretBasic { client_id: String, secret: Secret },
    /// `client_id` and `client_secret` in the body.
    SecretPost { client_id: String, secret: Secret },
    /// A fresh ES256 client assertion per request whose audience is the issuer.
    PrivateKeyJwt { client_id: String, key: Arc<Es256Key> },
}

impl ClientAuth {
    pub fn client_id(&self) -> Option<&str> {
        match self {
            ClientAuth::None { client_id } => client_id.as_deref(),
            ClientAuth::SecretBasic { client_id, .. }
            | ClientAuth::SecretPost { client_id, .. }
            | ClientAuth::PrivateKeyJwt { client_id, .. } => Some(client_id),
        }
    }

    /// A client id with a secret sent the way `method` says (`none`: the secret is not sent).
    pub fn with_secret(client_id: String, secret: Option<Secret>, method: TokenEndpointAuthMethod) -> ClientAuth {
        match (method, secret) {
            (TokenEndpointAuthMethod::ClientSecretBasic, Some(secret)) => ClientAuth::SecretBasic { client_id, secret },
            (TokenEndpointAuthMethod::ClientSecretPost, Some(secret)) => ClientAuth::SecretPost { client_id, secret },
            _ => ClientAuth::None { client_id: Some(client_id) },
        }
    }
}

impl From<ClientRegistration> for ClientAuth {
    fn from(registration: ClientRegistration) -> ClientAuth {
        ClientAuth::with_secret(
            registration.client_id,
            registration.client_secret,
            registration.token_endpoint_auth_method,
        )
    }
}

/// A token response (RFC 6749 §5.1, RFC 8693 §2.2.1).
#[derive(Deserialize)]
pub(crate) struct TokenResponse {
    pub access_token: Secret,
    #[serde(default)]
    token_type: Option<String>,
    refresh_token: Option<Secret>,
    expires_in: Option<u64>,
    scope: Option<String>,
    issued_token_type: Option<String>,
}

impl TokenResponse {
    /// What is stored: the granted scopes are the response's, else those requested.
    pub fn into_tokens(self, requested_scopes: &[String]) -> StoredTokens {
        StoredTokens {
            dpop: self.token_type.is_some_and(|t| t.eq_ignore_ascii_case("DPoP")),
            access_token: self.access_token,
            refresh_token: self.refresh_token,
            expires_at: self.expires_in.map(|s| SystemTime::now() + Duration::from_secs(s)),
            scopes: match self.scope {
                Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
                None => requested_scopes.to_vec(),
            },
        }
    }
}

#[derive(Deserialize)]
struct OAuthErrorBody {
    error: Option<String>,
    error_description: Option<String>,
}

/// The `error` and `error_description` of an OAuth error body, if it is one.
pub(crate) fn oauth_error(body: &str) -> (Option<String>, Option<String>) {
    match serde_json::from_str::<OAuthErrorBody>(body) {
        Ok(error) => (error.error, error.error_description),
        Err(_) => (None, None),
    }
}

fn form_encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

fn jose_error(e: jose::JoseError) -> AuthError {
    AuthError::Internal(format!("signing a token request: {e}"))
}

impl OAuth {
    /// The one place token requests are built and sent: the grant's parameters, `resource`
    /// (the PRM string as published), client authentication, and a DPoP proof at the
    /// authorization server when DPoP is on. A `use_dpop_nonce` error with a `DPoP-Nonce` is
    /// retried once with a fresh proof carrying the nonce; any other error is returned.
    pub(crate) async fn token_request(
        &self,
        session: &Session,
        client: &ClientAuth,
        grant: &Grant,
        scopes: &[String],
    ) -> Result<TokenResponse, AuthError> {
        let (endpoint, dpop) = match grant {
            // The ID-JAG is not bound to a key: no proof for the IdP.
            Grant::TokenExchange { idp_token_endpoint, .. } => (idp_token_endpoint.clone(), None),
            _ => (endpoint_url(session.metadata.token_endpoint.as_deref(), "token_endpoint")?, self.dpop()),
        };
        let mut nonce_retry = true;
        loop {
            let mut form = grant.params(session, scopes);
            form.push(("resource", session.resource.clone()));
            let mut request = self.http().post(endpoint.clone()).header(ACCEPT, "application/json");
            match client {
                ClientAuth::None { client_id } => form.extend(client_id.clone().map(|id| ("client_id", id))),
                ClientAuth::SecretBasic { client_id, secret } => {
                    request = request.basic_auth(form_encode(client_id), Some(form_encode(secret.expose())));
                }
                ClientAuth::SecretPost { client_id, secret } => {
                    form.push(("client_id", client_id.clone()));
                    form.push(("client_secret", secret.expose().to_owned()));
                }
                ClientAuth::PrivateKeyJwt { client_id, key } => {
                    // The audience is the issuer (RFC 7523bis), not the token endpoint URL.
                    let assertion = jose::client_assertion(key, client_id, &session.issuer).map_err(jose_error)?;
                    form.push(("client_id", client_id.clone()));
                    form.push(("client_assertion_type", jose::CLIENT_ASSERTION_TYPE_JWT_BEARER.into()));
                    form.push(("client_assertion", assertion));
                }
            }
            if let Some(dpop) = dpop {
                request =
                    request.header(jose::DPOP_HEADER, dpop.proof("POST", endpoint.as_str(), None).map_err(jose_error)?);
            }
            tracing::debug!(endpoint = %endpoint, grant = form[0].1, dpop = dpop.is_some(), "token request");
            let response =
                request.form(&form).send().await.map_err(|e| AuthError::Http(format!("POST {endpoint}: {e}")))?;
            let status = response.status();
            let nonce = dpop.and_then(|dpop| dpop.remember_nonce_from(endpoint.as_str(), response.headers()));
            let text = read_text(response).await;
            if status.is_success() {
                return serde_json::from_str(&text)
                    .map_err(|e| AuthError::InvalidMetadata(format!("the token response of {endpoint}: {e}")));
            }
            let (error, description) = oauth_error(&text);
            if error.as_deref() == Some(jose::USE_DPOP_NONCE) && nonce.is_some() && nonce_retry {
                tracing::debug!(endpoint = %endpoint, "the token endpoint wants a DPoP nonce; sending it");
                nonce_retry = false;
                continue;
            }
            return Err(AuthError::TokenEndpoint { status: status.as_u16(), error, description });
        }
    }

    /// Gets a token with a grant that needs no user and stores it. One attempt: an error is
    /// returned as is, never retried nor answered with another grant.
    pub(crate) async fn obtain_unattended(
        &self,
        session: &Session,
        unattended: &Unattended,
        scopes: &[String],
    ) -> Result<(), AuthError> {
        let client = match self.pre_registered(session) {
            Some(client) => client,
            // A workload identity token says who the client is.
            None if matches!(unattended, Unattended::JwtBearer { .. }) => ClientAuth::None { client_id: None },
            None => return Err(AuthError::NoClientIdentity { issuer: session.issuer.clone() }),
        };
        let grant = match unattended {
            Unattended::ClientCredentials => Grant::ClientCredentials,
            Unattended::JwtBearer { assertion } => Grant::JwtBearer { assertion: assertion.clone() },
            Unattended::TokenExchange { subject } => {
                let grant = Grant::AccessTokenExchange { subject_token: subject.get() };
                let issued = self.token_request(session, &client, &grant, scopes).await?;
                let tokens = exchanged(issued, scopes)?;
                self.inner.store.save_tokens(&session.resource, &session.issuer, tokens);
                return Ok(());
            }
            Unattended::EnterpriseManaged { idp_token_endpoint, idp_client_id, id_token } => {
                let idp_token_endpoint = endpoint_url(Some(idp_token_endpoint), "IdP token endpoint")?;
                let exchange = Grant::TokenExchange { idp_token_endpoint, id_token: id_token.clone() };
                let idp_client = ClientAuth::None { client_id: Some(idp_client_id.clone()) };
                let issued = self.token_request(session, &idp_client, &exchange, scopes).await?;
                if let Some(other) = issued.issued_token_type.as_deref().filter(|t| *t != TOKEN_TYPE_ID_JAG) {
                    return Err(AuthError::InvalidMetadata(format!(
                        "the token exchange issued {other}, not an ID-JAG"
                    )));
                }
                Grant::JwtBearer { assertion: issued.access_token }
            }
        };
        let tokens = self.token_request(session, &client, &grant, scopes).await?.into_tokens(scopes);
        self.inner.store.save_tokens(&session.resource, &session.issuer, tokens);
        Ok(())
    }
}

/// The tokens of an RFC 8693 response to an access token exchange: an access token (§2.2.1:
/// `issued_token_type` says so, and a `token_type` of `N_A` says it is not one), without a
/// refresh token, which would let what it grants outlive the subject token it came from.
fn exchanged(issued: TokenResponse, scopes: &[String]) -> Result<StoredTokens, AuthError> {
    if let Some(other) = issued.issued_token_type.as_deref().filter(|t| *t != TOKEN_TYPE_ACCESS_TOKEN) {
        return Err(AuthError::InvalidMetadata(format!("the token exchange issued {other}, not an access token")));
    }
    if issued.token_type.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("N_A")) {
        return Err(AuthError::InvalidMetadata(
            "the token exchange issued a token that is not an access token (N_A)".into(),
        ));
    }
    let mut tokens = issued.into_tokens(scopes);
    tokens.refresh_token = None;
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(json: serde_json::Value) -> TokenResponse {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn an_exchange_yields_an_access_token_without_a_refresh_token() {
        let issued = response(serde_json::json!({
            "access_token": "at", "token_type": "DPoP", "refresh_token": "rt", "expires_in": 60,
            "issued_token_type": TOKEN_TYPE_ACCESS_TOKEN, "scope": "notes:read",
        }));
        let tokens = exchanged(issued, &["notes:read".into(), "notes:write".into()]).unwrap();
        assert_eq!((tokens.access_token.expose(), tokens.refresh_token, tokens.dpop), ("at", None, true));
        assert_eq!(tokens.scopes, ["notes:read"]);
        // Another kind of token, or one that is no access token (N_A), is not used as one.
        let id_jag = response(serde_json::json!({ "access_token": "x", "issued_token_type": TOKEN_TYPE_ID_JAG }));
        assert!(exchanged(id_jag, &[]).is_err());
        let not_applicable = response(serde_json::json!({ "access_token": "x", "token_type": "N_A" }));
        assert!(exchanged(not_applicable, &[]).is_err());
    }
}
