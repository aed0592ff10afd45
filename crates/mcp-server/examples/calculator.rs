//! A small real server over stdio: arithmetic tools with typed arguments and structured output.
//!
//! ```text
//! cargo run -p mcp-server --example calculator
//! ```
//! Then point an MCP client at that command (it speaks both protocol eras).

use mcp_server::{Context, Error, Server, Structured, ToolRoute};
use mcp_types::ToolAnnotations;

/// Two operands.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Operands {
    /// The left operand.
    a: f64,
    /// The right operand.
    b: f64,
}

/// The outcome of an operation.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Outcome {
    result: f64,
}

fn operation(name: &str, description: &str, apply: fn(f64, f64) -> Result<f64, Error>) -> ToolRoute {
    let read_only = ToolAnnotations { read_only_hint: Some(true), idempotent_hint: Some(true), ..Default::default() };
    ToolRoute::new(name, move |_: Context, Operands { a, b }| async move {
        apply(a, b).map(|result| Structured(Outcome { result }))
    })
    .description(description)
    .annotations(read_only)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let server = Server::builder("calculator", env!("CARGO_PKG_VERSION"))
        .instructions("Arithmetic on two numbers. Division by zero is reported as a tool error.")
        .tool(operation("add", "Adds b to a", |a, b| Ok(a + b)))
        .tool(operation("subtract", "Subtracts b from a", |a, b| Ok(a - b)))
        .tool(operation("multiply", "Multiplies a by b", |a, b| Ok(a * b)))
        .tool(operation("divide", "Divides a by b", |a, b| {
            if b == 0.0 { Err(Error::failed("Cannot divide by zero")) } else { Ok(a / b) }
        }))
        .build()
        .expect("the calculator's tools are well-formed");
    mcp_server::stdio::serve_stdio(server).await
}
