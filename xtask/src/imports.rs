//! `cargo xtask imports`: every crate must read top-down (issue 43).
//!
//! Each `.rs` file is a room; a room stands above the rooms whose items it names. A file names an
//! item of another when a `use` or a path in its code (types, expressions, macro bodies: any
//! `crate::`, `$crate::`, `super::`, `self::` or child-module path in its tokens) reaches into a
//! module, resolved to the deepest module along the path that is declared (`crate::a::b::X` →
//! `a/b.rs` if `mod b` exists, else `a.rs`). A path through the crate root (`crate::X` where
//! `lib.rs` re-exports `X`) is an edge to `lib.rs`, and `lib.rs`'s `pub use` is an edge from it,
//! so a module that reaches a sibling through the root's re-exports closes a circle with
//! `lib.rs`. `mod x;` declares, it is no edge. Code in `#[cfg(test)]` modules counts for the file
//! it is in (tests read the house like any other room). Attributes' string paths
//! (`#[serde(with = "...")]`) and doc links are not seen.
//!
//! For each crate root (`src/lib.rs`, `src/main.rs` of `crates/*`, `xtask` and `tests`) it prints
//! the files, the floors (the longest chain in the graph of circles) and every circle with the
//! names that make each of its edges; it fails when any crate has a circle.

mod graph;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub use graph::{Graph, graph};

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
            let (circles, floor) = circles_and_floors(&graph);
            let top = floor.iter().copied().max().unwrap_or(0);
            println!("{label}: {} files, {top} floors, {} circles", graph.files.len(), circles.len());
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
            if !circles.is_empty() {
                failing.push(label);
            }
        }
    }
    anyhow::ensure!(failing.is_empty(), "import circles in {}", failing.join(", "));
    Ok(())
}
