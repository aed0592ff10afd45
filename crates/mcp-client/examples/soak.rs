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
//! ```

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
            other => return Err(format!("unknown flag {other}")),
        }
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
    let client = match Client::builder("soak", "1.0").era(args.era).connect_http(&args.url).await {
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
