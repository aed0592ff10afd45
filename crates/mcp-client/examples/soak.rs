//! Memory under a long load: one client makes `--calls` `tools/call`s of the `echo` tool (the
//! `mcp-server` example `echo`, directly or behind `mcp-gateway`) from `--clients` tasks, and
//! reads the resident memory of its own process and of `--watch` (a server's or gateway's pid) at
//! each checkpoint and after `--idle-secs` of rest. It fails when either grew by more than
//! `--tolerance` (default 10 %) over what it held at the first checkpoint. `benches/soak/run.sh`
//! drives it; see `benches/peer/RESULTS.md` for the figures.
//!
//! ```text
//! soak --url http://127.0.0.1:8080/mcp [--era auto|legacy] [--calls 1000000] [--clients 16]
//!      [--checkpoints 100000,500000,1000000] [--watch PID] [--idle-secs 60] [--tolerance 0.10]
//!      [--bearer TOKEN] [--header 'Name: value']...
//! soak --issuer 127.0.0.1:9000 --audience http://127.0.0.1:8080/mcp [--scope mcp:tools]
//! ```
//!
//! `--bearer` sends `Authorization: Bearer TOKEN` with every request, `--header` any header.
//! `--issuer` makes no calls: it serves a tiny OAuth authorization server on that address (its
//! RFC 8414 metadata at `/.well-known/oauth-authorization-server` and a JWKS holding one fixed
//! ES256 test key, the peer benchmark's `ours http --auth` key), prints one access token it issued
//! for `--audience` (RFC 9068: `typ` `at+jwt`, a `kid`, `--scope`, valid for a day) as its only
//! line of stdout, and serves until it is killed; a resource server configured with that issuer
//! and audience accepts the token.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcp_client::{Client, EraPreference};

struct Args {
    url: String,
    era: EraPreference,
    calls: u64,
    clients: u64,
    checkpoints: Vec<u64>,
    watch: Option<u32>,
    idle: Duration,
    tolerance: f64,
    headers: Vec<(String, String)>,
    issuer: Option<String>,
    audience: String,
    scope: String,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        url: String::new(),
        era: EraPreference::Auto,
        calls: 1_000_000,
        clients: 16,
        checkpoints: Vec::new(),
        watch: None,
        idle: Duration::from_secs(60),
        tolerance: 0.10,
        headers: Vec::new(),
        issuer: None,
        audience: String::new(),
        scope: "mcp:tools".to_owned(),
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |value: &str| value.parse::<u64>().map_err(|e| format!("{flag} {value}: {e}"));
        match flag.as_str() {
            "--url" => args.url = value,
            "--era" => {
                args.era = match value.as_str() {
                    "auto" | "modern" => EraPreference::Auto,
                    "legacy" => EraPreference::Legacy,
                    other => return Err(format!("--era {other}: auto, modern or legacy")),
                }
            }
            "--calls" => args.calls = number(&value)?,
            "--clients" => args.clients = number(&value)?.max(1),
            "--checkpoints" => args.checkpoints = value.split(',').map(number).collect::<Result<_, _>>()?,
            "--watch" => args.watch = Some(number(&value)? as u32),
            "--idle-secs" => args.idle = Duration::from_secs(number(&value)?),
            "--tolerance" => args.tolerance = value.parse().map_err(|e| format!("--tolerance {value}: {e}"))?,
            "--bearer" => args.headers.push(("authorization".to_owned(), format!("Bearer {value}"))),
            "--header" => {
                let (name, content) =
                    value.split_once(':').ok_or_else(|| format!("--header {value}: not `Name: value`"))?;
                args.headers.push((name.trim().to_owned(), content.trim().to_owned()));
            }
            "--issuer" => args.issuer = Some(value),
            "--audience" => args.audience = value,
            "--scope" => args.scope = value,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.issuer.is_some() {
        if args.audience.is_empty() {
            return Err("--issuer needs --audience (the resource URL the token is for)".to_owned());
        }
        return Ok(args);
    }
    if args.url.is_empty() {
        return Err("--url is required".to_owned());
    }
    if args.checkpoints.is_empty() {
        args.checkpoints = [args.calls / 10, args.calls / 2, args.calls].into();
    }
    args.checkpoints.retain(|&at| at > 0 && at <= args.calls);
    args.checkpoints.dedup();
    Ok(args)
}

/// `VmRSS` of a process, in KiB.
fn rss_kib(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One reading: (label, own RSS, watched RSS).
type Reading = (String, Option<u64>, Option<u64>);

fn read(label: String, watch: Option<u32>) -> Reading {
    let reading = (label, rss_kib("self"), watch.and_then(|pid| rss_kib(&pid.to_string())));
    let show = |kib: Option<u64>| kib.map_or("-".to_owned(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0));
    println!("{:>12}  client {:>10}  watched {:>10}", reading.0, show(reading.1), show(reading.2));
    reading
}

/// Whether every later reading stays within `tolerance` of the first; says which did not.
fn flat(readings: &[Reading], pick: impl Fn(&Reading) -> Option<u64>, who: &str, tolerance: f64) -> bool {
    let Some(first) = readings.first().and_then(&pick) else { return true };
    let bound = first as f64 * (1.0 + tolerance);
    let mut ok = true;
    for reading in &readings[1..] {
        if let Some(kib) = pick(reading)
            && kib as f64 > bound
        {
            println!("{who}: {} KiB at {} is more than {:.0} % over {first} KiB", kib, reading.0, tolerance * 100.0);
            ok = false;
        }
    }
    ok
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("soak: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(address) = &args.issuer {
        return match issuer::serve(address, &args.audience, &args.scope).await {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("soak: issuer on {address}: {error}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let mut builder = Client::builder("soak", "1.0").era(args.era);
    for (name, value) in &args.headers {
        builder = builder.http_header(name, value);
    }
    let client = match builder.connect_http(&args.url).await {
        Ok(client) => client,
        Err(error) => {
            eprintln!("soak: cannot connect to {}: {error}", args.url);
            return std::process::ExitCode::FAILURE;
        }
    };
    println!("soak: {} calls from {} tasks, {:?} era, to {}", args.calls, args.clients, client.era(), args.url);
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..args.clients)
        .map(|_| {
            let (client, next, done, failed, calls) =
                (client.clone(), Arc::clone(&next), Arc::clone(&done), Arc::clone(&failed), args.calls);
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    let arguments = serde_json::json!({ "n": done.load(Ordering::Relaxed) });
                    if client.call_tool("echo", arguments.as_object().cloned()).await.is_err() {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut readings = Vec::new();
    for &checkpoint in &args.checkpoints {
        while done.load(Ordering::Relaxed) < checkpoint {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        readings.push(read(format!("{checkpoint} calls"), args.watch));
    }
    for worker in workers {
        let _ = worker.await;
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "soak: {} calls in {seconds:.1} s ({:.0}/s), {} failed",
        args.calls,
        args.calls as f64 / seconds,
        failed.load(Ordering::Relaxed)
    );
    if !args.idle.is_zero() {
        tokio::time::sleep(args.idle).await;
        readings.push(read(format!("idle {} s", args.idle.as_secs()), args.watch));
    }
    let own = flat(&readings, |r| r.1, "client", args.tolerance);
    let watched = flat(&readings, |r| r.2, "watched", args.tolerance);
    client.close().await;
    match own && watched && failed.load(Ordering::Relaxed) == 0 {
        true => std::process::ExitCode::SUCCESS,
        false => std::process::ExitCode::FAILURE,
    }
}

/// `--issuer`: a tiny authorization server whose tokens a resource server verifies as JWTs.
mod issuer {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
    use p256::ecdsa::signature::Signer as _;
    use p256::ecdsa::{Signature, SigningKey};

    /// The private scalar of the fixed P-256 test key of `benches/peer/src/bin/ours.rs`
    /// (`ISSUER_KEY`, there as PKCS#8), used for nothing but benchmarks.
    const KEY: &str = "4520f1087e87e0a2285bfa17d1229e40b4ac1702e5cc2337ba31c0f76564955f";
    const KEY_ID: &str = "peer-bench-es256";

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hex")).collect()
    }

    /// Serves the metadata and the JWKS on `address`, prints a token for `audience`, and serves
    /// until killed.
    pub async fn serve(address: &str, audience: &str, scope: &str) -> std::io::Result<()> {
        let key = SigningKey::from_slice(&hex(KEY)).map_err(|e| std::io::Error::other(e.to_string()))?;
        let point = key.verifying_key().to_encoded_point(false);
        let (x, y) = (point.x().expect("uncompressed"), point.y().expect("uncompressed"));
        let jwks = serde_json::json!({ "keys": [{
            "kty": "EC", "crv": "P-256", "x": B64URL.encode(x), "y": B64URL.encode(y),
            "kid": KEY_ID, "use": "sig", "alg": "ES256",
        }] })
        .to_string();
        let listener = tokio::net::TcpListener::bind(address).await?;
        let issuer = format!("http://{}", listener.local_addr()?);
        let metadata = serde_json::json!({
            "issuer": issuer,
            "jwks_uri": format!("{issuer}/jwks"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["client_credentials"],
            "token_endpoint": format!("{issuer}/token"),
        })
        .to_string();

        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs();
        let header = serde_json::json!({ "alg": "ES256", "typ": "at+jwt", "kid": KEY_ID });
        let claims = serde_json::json!({
            "iss": issuer,
            "sub": "soak-user",
            "aud": audience,
            "client_id": "soak",
            "scope": scope,
            "iat": now,
            "exp": now + 86_400,
            "jti": "soak-token-1",
        });
        let input = format!("{}.{}", B64URL.encode(header.to_string()), B64URL.encode(claims.to_string()));
        let signature: Signature = key.sign(input.as_bytes());
        println!("{input}.{}", B64URL.encode(signature.to_bytes()));

        let json = |body: String| move || std::future::ready(([("content-type", "application/json")], body));
        let router = axum::Router::new()
            .route("/.well-known/oauth-authorization-server", axum::routing::get(json(metadata)))
            .route("/jwks", axum::routing::get(json(jwks)));
        axum::serve(listener, router).await
    }
}
