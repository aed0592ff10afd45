//! Leasing a pool's members.

use super::*;

/// mcp-client's scripted stdio server in the 2026-07-28 era (its tool `crash` ends the process),
/// supervised by someone else, as the gateway's processes are.
fn scripted_server(log: &std::path::Path) -> mcp_client::StdioCommand {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../mcp-client/tests/support/stdio_server.py");
    mcp_client::StdioCommand::new("python3").arg(script).arg("modern").arg(log).restart_on_exit(false)
}

fn member_of(upstream: &Upstream, lease: &Lease) -> usize {
    upstream.members.iter().position(|member| Arc::ptr_eq(&member.in_flight, &lease.in_flight.0)).unwrap()
}

#[tokio::test]
async fn a_pool_member_whose_process_ended_is_passed_over_before_its_supervisor_notices() {
    let config = crate::config::Config::from_toml("[[upstream]]\nname = \"p\"\ncommand = [\"x\"]\npool = 2\n").unwrap();
    let upstream = Upstream::new(config.upstreams[0].clone());
    // Connected by hand: no supervisor runs, so nothing replaces a process that ends.
    let logs: Vec<_> = (0..2)
        .map(|n| std::env::temp_dir().join(format!("mcp-gateway-lease-{}-{n}.log", std::process::id())))
        .collect();
    let mut clients = Vec::new();
    for (member, log) in upstream.members.iter().zip(&logs) {
        let client = Client::builder("lease-test", "1.0")
            .probe_timeout(Duration::from_secs(10))
            .connect_stdio(scripted_server(log))
            .await
            .unwrap();
        member.state.lock().unwrap().client = Some(client.clone());
        clients.push(client);
    }
    // The first process is the less busy one: one call in flight on the second.
    let first = upstream.lease().unwrap();
    let second = upstream.lease().unwrap();
    assert_eq!((member_of(&upstream, &first), member_of(&upstream, &second)), (0, 1));
    drop(first);
    assert_eq!(member_of(&upstream, &upstream.lease().unwrap()), 0);

    let crashed = clients[0].call_tool("crash", ()).await.unwrap_err();
    assert!(matches!(crashed, mcp_client::Error::Closed), "{crashed}");
    assert_eq!(member_of(&upstream, &upstream.lease().unwrap()), 1, "the ended process is passed over");

    let crashed = clients[1].call_tool("crash", ()).await.unwrap_err();
    assert!(matches!(crashed, mcp_client::Error::Closed), "{crashed}");
    let none = upstream.lease().err().expect("no process is left");
    assert_eq!(none, "its process ended");
    logs.iter().for_each(|log| drop(std::fs::remove_file(log)));
}
