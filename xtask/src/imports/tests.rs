//! The check on tiny in-memory crates.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

/// The graph of an in-memory crate (`src/...` paths → text), as `from → to (names)` lines.
fn edges(files: &[(&str, &str)]) -> (Vec<String>, Graph) {
    let files: BTreeMap<PathBuf, String> =
        files.iter().map(|(path, text)| (Path::new("src").join(path), text.to_string())).collect();
    let graph = graph(Path::new("src/lib.rs"), &|path| files.get(path).cloned()).unwrap();
    let name = |file: usize| graph.files[file].strip_prefix("src").unwrap().display().to_string();
    let lines = graph
        .edges
        .iter()
        .map(|((from, to), names)| {
            format!("{} → {} ({})", name(*from), name(*to), names.iter().cloned().collect::<Vec<_>>().join(", "))
        })
        .collect();
    (lines, graph)
}

#[test]
fn a_module_reaching_a_sibling_through_the_root_closes_a_circle() {
    let (lines, graph) = edges(&[
        ("lib.rs", "mod a; mod b; pub use a::A;"),
        ("a.rs", "use crate::b::helper; pub struct A(u8);"),
        ("b.rs", "pub fn helper() -> crate::A { crate::A(1) }"),
    ]);
    assert_eq!(lines, ["lib.rs → a.rs (A)", "a.rs → b.rs (helper)", "b.rs → lib.rs (A)"]);
    let (circles, floors) = circles_and_floors(&graph);
    assert_eq!(circles, [vec![0, 1, 2]]);
    assert_eq!(floors, [1, 1, 1]);
}

#[test]
fn a_crate_that_reads_top_down_has_floors_and_no_circle() {
    let (lines, graph) = edges(&[
        ("lib.rs", "mod a; mod b; pub use a::A;"),
        ("a.rs", "use crate::b::helper; pub struct A; #[cfg(test)] mod tests { use super::*; }"),
        // A path in a macro counts; one in `quote!` is the generated crate's.
        (
            "b.rs",
            "pub fn helper() { tracing::debug!(\"{}\", self::c::C); quote!(crate::a::A); } mod c { pub struct C; }",
        ),
    ]);
    assert_eq!(lines, ["lib.rs → a.rs (A)", "a.rs → b.rs (helper)"]);
    let (circles, floors) = circles_and_floors(&graph);
    assert!(circles.is_empty());
    assert_eq!(floors, [3, 2, 1]);
}

#[test]
fn paths_resolve_to_the_deepest_module_file() {
    let (lines, _) = edges(&[
        ("lib.rs", "mod server; mod user;"),
        ("server.rs", "pub mod lists; pub mod inline { pub struct I; } pub struct Y;"),
        ("server/lists.rs", "pub struct X; #[path = \"../far.rs\"] mod far;"),
        ("far.rs", "pub fn f() -> super::super::Y { todo!() }"),
        (
            "user.rs",
            "use crate::server; fn f(_: crate::server::lists::X, _: server::Y, _: crate::server::inline::I) {} \
             fn g() { use crate::server::lists::*; }",
        ),
    ]);
    assert_eq!(lines, ["far.rs → server.rs (Y)", "user.rs → server.rs (I, Y)", "user.rs → server/lists.rs (*, X)"]);
}

#[test]
fn a_glob_names_what_the_code_mentions() {
    let (lines, graph) = edges(&[
        ("lib.rs", "mod parent;"),
        ("parent.rs", "mod child; mod other; use child::helper; pub struct Parent; fn unused() {}"),
        ("parent/child.rs", "use super::*; pub fn helper() -> Parent { Parent }"),
        // Mentions nothing of `parent`: its glob is no edge.
        ("parent/other.rs", "use super::*; fn own() {}"),
    ]);
    assert_eq!(lines, ["parent.rs → parent/child.rs (helper)", "parent/child.rs → parent.rs (Parent)"]);
    assert_eq!(circles_and_floors(&graph).0, [vec![1, 2]]);
}

#[test]
fn a_glob_brings_modules_as_paths_not_as_names() {
    let (lines, _) = edges(&[
        ("lib.rs", "mod parent;"),
        ("parent.rs", "mod a; mod b; struct S { a: u8 }"),
        // `a` the field is nothing; `b::B` through the glob is `b.rs`.
        ("parent/a.rs", "use super::*; fn f(s: S) -> b::B { let _ = s.a; b::B }"),
        ("parent/b.rs", "pub struct B;"),
    ]);
    assert_eq!(lines, ["parent/a.rs → parent.rs (S)", "parent/a.rs → parent/b.rs (B)"]);
}

#[test]
fn a_glob_reaches_what_its_target_re_exports() {
    let (lines, _) = edges(&[
        ("lib.rs", "mod private;"),
        ("private.rs", "mod buffered; mod shape; pub use buffered::*; pub use shape::*;"),
        ("private/buffered.rs", "pub struct Buffered;"),
        // `Buffered` comes through `private.rs`'s glob: an edge to `private.rs`.
        ("private/shape.rs", "use super::*; pub fn f(_: Buffered) {}"),
    ]);
    assert_eq!(
        lines,
        [
            "private.rs → private/buffered.rs (*)",
            "private.rs → private/shape.rs (*)",
            "private/shape.rs → private.rs (Buffered)"
        ]
    );
}
