//! The authorization code flow with PKCE and client identity (pre-registered, Client ID
//! Metadata Document, Dynamic Client Registration); token requests are built in
//! [`grants`](super::grants).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest as _, Sha256};
use url::Url;

use super::authorizer::endpoint_of;
use super::discovery::ServerMetadata;
use super::error::AuthError;
use super::fetch::{endpoint_url, read_text};
use super::grants::{ClientAuth, Grant, oauth_error};
use super::oauth::{OAuth, Session};
use super::store::{ClientRegistration, Secret, StoredTokens, TokenEndpointAuthMethod};

/// `n` random bytes from the operating system, base64url without padding.
fn random_string(n: usize) -> Result<String, AuthError> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Internal(format!("no randomness available: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The PKCE S256 challenge of a verifier (RFC 7636 §4.2).
pub(crate) fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

impl OAuth {
    /// One authorization: client identity, the user's round trip through the authorizer
    /// (checking `iss` and `state`), then the code exchange. Tokens are stored on success.
    pub(crate) async fn authorize(&self, session: &Session, scopes: &[String]) -> Result<(), AuthError> {
        let authorizer = self.inner.authorizer.as_ref().ok_or(AuthError::NoAuthorizer)?;
        let redirect_uri = self.redirect_uri()?;
        let metadata = &session.metadata;
        if !metadata.code_challenge_methods_supported.iter().flatten().any(|m| m == "S256") {
            return Err(AuthError::PkceNotSupported { issuer: session.issuer.clone() });
        }
        let endpoint = endpoint_url(metadata.authorization_endpoint.as_deref(), "authorization_endpoint")?;
        let client = self.client_identity(session).await?;

        let verifier = Secret::new(random_string(32)?);
        let state = random_string(16)?;
        let mut url = endpoint.clone();
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", client.client_id().unwrap_or_default())
                .append_pair("redirect_uri", redirect_uri.as_str())
                .append_pair("code_challenge", &pkce_challenge(verifier.expose()))
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &session.resource);
            if !scopes.is_empty() {
                query.append_pair("scope", &scopes.join(" "));
            }
        }
        tracing::debug!(endpoint = %endpoint_of(&endpoint), scope = %scopes.join(" "), "authorization request");
        let redirect = authorizer.authorize(url).await?;
        let code = check_redirect(&redirect, session, &state)?;
        let grant = Grant::AuthorizationCode { code, verifier, redirect_uri: redirect_uri.to_string() };
        let tokens = self.token_request(session, &client, &grant, scopes).await?.into_tokens(scopes);
        self.inner.store.save_tokens(&session.resource, &session.issuer, tokens);
        Ok(())
    }

    /// The configured redirect URI, else the authorizer's.
    fn redirect_uri(&self) -> Result<Url, AuthError> {
        match &self.inner.config.redirect_uri {
            Some(uri) => {
                Url::parse(uri).map_err(|e| AuthError::Internal(format!("the redirect URI {uri:?} is not a URL: {e}")))
            }
            None => self
                .inner
                .authorizer
                .as_ref()
                .and_then(|a| a.redirect_uri())
                .ok_or_else(|| AuthError::Internal("no redirect URI: set OAuthBuilder::redirect_uri".into())),
        }
    }

    /// Exchanges the stored refresh token; the new tokens are stored on success.
    pub(crate) async fn refresh(&self, session: &Session, tokens: &StoredTokens) -> Result<(), AuthError> {
        let refresh_token = tokens.refresh_token.clone().ok_or(AuthError::Internal("no refresh token".into()))?;
        let client = self.client_identity(session).await?;
        let grant = Grant::RefreshToken { refresh_token: refresh_token.clone() };
        let mut fresh = self.token_request(session, &client, &grant, &tokens.scopes).await?.into_tokens(&tokens.scopes);
        // A server that does not rotate refresh tokens omits the new one.
        fresh.refresh_token = fresh.refresh_token.or(Some(refresh_token));
        self.inner.store.save_tokens(&session.resource, &session.issuer, fresh);
        Ok(())
    }

    /// The pre-registered client, unless it is restricted to another issuer: `private_key_jwt`
    /// with a configured key, else the secret sent the configured way or the way the server
    /// supports.
    pub(crate) fn pre_registered(&self, session: &Session) -> Option<ClientAuth> {
        let config = &self.inner.config;
        let client_id = config.client_id.clone()?;
        if config.client_issuer.as_ref().is_some_and(|issuer| *issuer != session.issuer) {
            return None;
        }
        if let Some(key) = &config.client_key {
            return Some(ClientAuth::PrivateKeyJwt { client_id, key: key.clone() });
        }
        let method = match &config.client_secret {
            Some(_) => config.client_auth_method.unwrap_or_else(|| secret_method(&session.metadata)),
            None => TokenEndpointAuthMethod::None,
        };
        Some(ClientAuth::with_secret(client_id, config.client_secret.clone(), method))
    }

    /// The client's identity at the session's authorization server, in the order the MCP
    /// specification gives: pre-registered credentials, a Client ID Metadata Document when the
    /// server supports them, a registration made earlier with this issuer, else Dynamic
    /// Client Registration.
    pub(crate) async fn client_identity(&self, session: &Session) -> Result<ClientAuth, AuthError> {
        let config = &self.inner.config;
        let metadata = &session.metadata;
        if let Some(client) = self.pre_registered(session) {
            return Ok(client);
        }
        if metadata.client_id_metadata_document_supported
            && let Some(url) = &config.client_metadata_url
        {
            return Ok(ClientAuth::None { client_id: Some(url.clone()) });
        }
        if let Some(registration) = self.inner.store.registration(&session.issuer) {
            return Ok(registration.into());
        }
        let Some(endpoint) = &metadata.registration_endpoint else {
            return Err(AuthError::NoClientIdentity { issuer: session.issuer.clone() });
        };
        let registration = self.register(endpoint, metadata, &self.redirect_uri()?).await?;
        self.inner.store.save_registration(&session.issuer, registration.clone());
        Ok(registration.into())
    }

    /// Dynamic Client Registration (RFC 7591).
    async fn register(
        &self,
        endpoint: &str,
        metadata: &ServerMetadata,
        redirect_uri: &Url,
    ) -> Result<ClientRegistration, AuthError> {
        let config = &self.inner.config;
        let endpoint = endpoint_url(Some(endpoint), "registration_endpoint")?;
        let requested = registration_method(metadata);
        let mut body = json!({
            "client_name": config.client_name,
            "redirect_uris": [redirect_uri.as_str()],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": requested.as_str(),
        });
        // SEP-837 (2026-07-28): say what kind of application this is.
        if config.protocol_version.as_str() >= "2026-07-28" {
            body["application_type"] = json!(application_type(redirect_uri));
        }
        tracing::debug!(endpoint = %endpoint, "dynamic client registration");
        let response = self
            .http()
            .post(endpoint.clone())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| AuthError::Http(format!("POST {endpoint}: {e}")))?;
        let status = response.status();
        let text = read_text(response).await;
        if !status.is_success() {
            let (error, description) = oauth_error(&text);
            return Err(AuthError::Registration { status: status.as_u16(), error, description });
        }
        let registered: RegistrationResponse = serde_json::from_str(&text)
            .map_err(|e| AuthError::InvalidMetadata(format!("the registration response of {endpoint}: {e}")))?;
        let client_secret = registered.client_secret.map(Secret::new);
        let method = registered
            .token_endpoint_auth_method
            .as_deref()
            .and_then(TokenEndpointAuthMethod::parse)
            .unwrap_or(requested);
        // A secret method without a secret cannot work; fall back to a public client.
        let method = if client_secret.is_none() { TokenEndpointAuthMethod::None } else { method };
        Ok(ClientRegistration { client_id: registered.client_id, client_secret, token_endpoint_auth_method: method })
    }
}

/// Checks the authorization response (RFC 9207 `iss` first, then `state`, then `error`) and
/// returns the code.
fn check_redirect(redirect: &Url, session: &Session, state: &str) -> Result<Secret, AuthError> {
    let param = |name: &str| redirect.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    // Plain string comparison: no normalisation (a trailing slash is a different issuer).
    match param("iss") {
        Some(iss) if iss != session.issuer => {
            return Err(AuthError::IssMismatch { expected: session.issuer.clone(), found: Some(iss) });
        }
        None if session.metadata.authorization_response_iss_parameter_supported => {
            return Err(AuthError::IssMismatch { expected: session.issuer.clone(), found: None });
        }
        _ => {}
    }
    if param("state").as_deref() != Some(state) {
        return Err(AuthError::StateMismatch);
    }
    if let Some(error) = param("error") {
        return Err(AuthError::AuthorizationDenied { error, description: param("error_description") });
    }
    param("code").map(Secret::new).ok_or(AuthError::MissingCode)
}

/// For pre-registered secrets: what the server supports, Basic preferred (RFC 8414: Basic
/// when the server lists nothing).
fn secret_method(metadata: &ServerMetadata) -> TokenEndpointAuthMethod {
    let supported = metadata.token_endpoint_auth_methods_supported.as_deref().unwrap_or_default();
    let supports = |m: TokenEndpointAuthMethod| supported.iter().any(|s| s == m.as_str());
    if supported.is_empty() || supports(TokenEndpointAuthMethod::ClientSecretBasic) {
        TokenEndpointAuthMethod::ClientSecretBasic
    } else if supports(TokenEndpointAuthMethod::ClientSecretPost) {
        TokenEndpointAuthMethod::ClientSecretPost
    } else {
        TokenEndpointAuthMethod::None
    }
}

/// For dynamic registration: a public client when the server allows one (a client that
/// registers itself at run time cannot keep a secret much better than none), else a secret.
fn registration_method(metadata: &ServerMetadata) -> TokenEndpointAuthMethod {
    let supported = metadata.token_endpoint_auth_methods_supported.as_deref().unwrap_or_default();
    if supported.iter().any(|s| s == "none") { TokenEndpointAuthMethod::None } else { secret_method(metadata) }
}

/// `native` for loopback and custom-scheme redirects, `web` otherwise (SEP-837).
fn application_type(redirect_uri: &Url) -> &'static str {
    let loopback = matches!(redirect_uri.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    if loopback || !matches!(redirect_uri.scheme(), "http" | "https") { "native" } else { "web" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_challenge_is_base64url_of_sha256() {
        // Computed independently: base64url(sha256(verifier)) without padding.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mA4-aUxmKrbsrXedaAOWtLzlnNtOHI"),
            "W_U11X9emFbJdVmWxhl24W__YY46_nqXLMs0FfT5NUo"
        );
    }

    #[test]
    fn application_type_follows_the_redirect() {
        assert_eq!(application_type(&"http://localhost:3000/callback".parse().unwrap()), "native");
        assert_eq!(application_type(&"http://127.0.0.1:8/cb".parse().unwrap()), "native");
        assert_eq!(application_type(&"com.example.app:/cb".parse().unwrap()), "native");
        assert_eq!(application_type(&"https://app.example.com/cb".parse().unwrap()), "web");
    }
}
