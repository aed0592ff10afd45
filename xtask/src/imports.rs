//! `cargo xtask imports`: every crate must read top-down (issue 43).
//!
//! Each `.rs` file names items of others when a `use` or a path in its code (types, expressions,
//! macro bodies: any `crate::`, `$crate::`, `super::`, `self::` or child-module path in its
//! tokens) reaches into a module, resolved to the deepest module along the path that is declared
//! (`crate::a::b::X` → `a/b.rs` if `mod b` exists, else `a.rs`); `mod x;` declares, it is no
//! edge. Code in `#[cfg(test)]` modules counts for the file it is in. Attributes' string paths
//! (`#[serde(with = "...")]`) and doc links are not seen.
//!
//! A module and its own children are one room (a parent re-exports its children, a child uses its
//! parent's private helpers): edges between a file and its ancestors are left out, and every other
//! edge joins the two sibling rooms that hold its ends ([`rooms`]). The rooms must form no circle,
//! and no file may reach an item through the crate root's re-exports (`crate::Server` instead of
//! `crate::server::Server`): `lib.rs` only declares modules and re-exports the public API.
//!
//! For each crate root (`src/lib.rs`, `src/main.rs` of `crates/*`, `xtask` and `tests`) it prints
//! the files, the floors (the longest chain in the graph of rooms) and every circle with the
//! names that make each of its edges; it fails on a circle or an import through the root.

mod graph;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub use graph::{Graph, graph};

/// A file's module path under `src` (`server/run.rs` → `server::run`, `auth/mod.rs` → `auth`,
/// the crate root → nothing).
fn module_path(file: &Path, src: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut path: Vec<String> = relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
    if matches!(path.last().map(String::as_str), Some("mod")) || path == ["lib"] || path == ["main"] {
        path.pop();
    }
    path
}

/// The graph of rooms: a module and its own children are one room, so an edge between a file and
/// one of its ancestors is dropped, and any other edge joins the two children of the files'
/// nearest common ancestor that hold them (`server/run.rs → routes.rs` is `server.rs → routes.rs`;
/// `auth/flow.rs → auth/grants.rs` stays). Also returns the edges into the crate root from below:
/// names reached through the root's re-exports instead of by their module's path.
pub fn rooms(graph: &Graph, src: &Path) -> (Graph, Vec<(usize, BTreeSet<String>)>) {
    let paths: Vec<Vec<String>> = graph.files.iter().map(|file| module_path(file, src)).collect();
    let file_of = |path: &[String]| paths.iter().position(|p| p == path);
    let mut lifted = Graph { files: graph.files.clone(), edges: Default::default() };
    let mut through_root = Vec::new();
    for (&(from, to), names) in &graph.edges {
        let (a, b) = (&paths[from], &paths[to]);
        if b.is_empty() && !a.is_empty() {
            through_root.push((from, names.clone()));
        }
        let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        if common == a.len() || common == b.len() {
            continue;
        }
        // Both rooms exist: a file's ancestors are declared by files of the crate.
        let (Some(room_a), Some(room_b)) = (file_of(&a[..=common]), file_of(&b[..=common])) else { continue };
        lifted.edges.entry((room_a, room_b)).or_default().extend(names.iter().cloned());
    }
    (lifted, through_root)
}

/// The graph's circles (sets of more than one file that reach each other) and each file's floor,
/// counted from the bottom: a file that imports nothing of its crate is on floor 1, the others one
/// above the highest floor they reach outside their circle.
pub fn circles_and_floors(graph: &Graph) -> (Vec<Vec<usize>>, Vec<usize>) {
    let count = graph.files.len();
    let mut next = vec![Vec::new(); count];
    for &(from, to) in graph.edges.keys() {
        next[from].push(to);
    }
    // A crate has tens of files: each file's reach by a plain search is cheap.
    let reach: Vec<Vec<bool>> = (0..count)
        .map(|start| {
            let mut seen = vec![false; count];
            let mut stack = vec![start];
            while let Some(node) = stack.pop() {
                for &to in &next[node] {
                    if !std::mem::replace(&mut seen[to], true) {
                        stack.push(to);
                    }
                }
            }
            seen
        })
        .collect();
    let circles: BTreeSet<Vec<usize>> = (0..count)
        .map(|node| (0..count).filter(|&other| other == node || (reach[node][other] && reach[other][node])).collect())
        .filter(|circle: &Vec<usize>| circle.len() > 1)
        .collect();
    // What a file reaches outside its circle reaches less than it does: lower files come first.
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by_key(|&node| reach[node].iter().filter(|&&reached| reached).count());
    let mut floor = vec![0; count];
    for node in order {
        let below = (0..count).filter(|&to| reach[node][to] && !reach[to][node]);
        floor[node] = 1 + below.map(|to| floor[to]).max().unwrap_or(0);
    }
    (circles.into_iter().collect(), floor)
}

/// Checks every crate of the workspace at `root` (or those named in `only`), printing each one's
/// files, floors and circles; with `floors`, the files on each floor too.
pub fn run(root: &Path, only: &[String], floors: bool) -> anyhow::Result<()> {
    let mut dirs: Vec<PathBuf> =
        std::fs::read_dir(root.join("crates"))?.map(|entry| Ok(entry?.path())).collect::<std::io::Result<_>>()?;
    dirs.sort();
    dirs.extend([root.join("xtask"), root.join("tests")]);
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    let mut failing = Vec::new();
    for dir in dirs {
        let name = dir.file_name().unwrap_or_default().to_string_lossy().into_owned();
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let src = dir.join("src");
        let has_lib = src.join("lib.rs").is_file();
        for (file, label) in
            [("lib.rs", name.clone()), ("main.rs", if has_lib { format!("{name} (main.rs)") } else { name.clone() })]
        {
            if !src.join(file).is_file() {
                continue;
            }
            let graph = graph(&src.join(file), &read)?;
            let shown = |file: usize| {
                let path = &graph.files[file];
                path.strip_prefix(&src).or_else(|_| path.strip_prefix(root)).unwrap_or(path).display().to_string()
            };
            let files = graph.files.len();
            let (graph, through_root) = rooms(&graph, &src);
            let (circles, floor) = circles_and_floors(&graph);
            let top = floor.iter().copied().max().unwrap_or(0);
            println!("{label}: {files} files, {top} floors, {} circles", circles.len());
            for (from, names) in &through_root {
                let names = names.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
                println!("  through the crate root: {} uses {names} (import it by its module's path)", shown(*from));
            }
            for circle in &circles {
                println!("  circle: {}", circle.iter().map(|&file| shown(file)).collect::<Vec<_>>().join(", "));
                for ((from, to), names) in &graph.edges {
                    if circle.contains(from) && circle.contains(to) {
                        let names = names.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
                        println!("    {} → {} ({names})", shown(*from), shown(*to));
                    }
                }
            }
            if floors {
                for level in (1..=top).rev() {
                    let files: Vec<String> = (0..graph.files.len()).filter(|&f| floor[f] == level).map(shown).collect();
                    println!("  floor {level}: {}", files.join(", "));
                }
            }
            if !circles.is_empty() || !through_root.is_empty() {
                failing.push(label);
            }
        }
    }
    anyhow::ensure!(failing.is_empty(), "import circles (or imports through the crate root) in {}", failing.join(", "));
    Ok(())
}
