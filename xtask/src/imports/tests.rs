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

#[test]
fn a_parent_and_its_children_are_one_room_and_siblings_at_any_depth_are_rooms_of_their_own() {
    let (_, graph) = edges(&[
        ("lib.rs", "mod server; mod routes; mod auth; pub use server::Server;"),
        ("server.rs", "mod run; pub use run::serve; pub struct Server; fn helper() {}"),
        ("server/run.rs", "use super::helper; use crate::routes::Route; pub fn serve() {}"),
        ("routes.rs", "pub struct Route;"),
        ("auth/mod.rs", "mod flow; mod grants;"),
        ("auth/flow.rs", "use super::grants::grant; pub fn flow() {}"),
        ("auth/grants.rs", "use crate::Server; pub fn grant() { super::flow::flow() }"),
    ]);
    let (rooms, through_root) = rooms(&graph, Path::new("src"));
    let name = |file: usize| graph.files[file].strip_prefix("src").unwrap().display().to_string();
    let lines: Vec<String> = rooms.edges.keys().map(|(from, to)| format!("{} → {}", name(*from), name(*to))).collect();
    // server.rs ↔ server/run.rs is one room; run.rs → routes.rs lifts to server.rs → routes.rs.
    assert_eq!(lines, ["server.rs → routes.rs", "auth/flow.rs → auth/grants.rs", "auth/grants.rs → auth/flow.rs"]);
    let circles: Vec<Vec<String>> =
        circles_and_floors(&rooms).0.into_iter().map(|circle| circle.into_iter().map(name).collect()).collect();
    assert_eq!(circles, [vec!["auth/flow.rs".to_owned(), "auth/grants.rs".to_owned()]]);
    let through: Vec<(String, Vec<String>)> =
        through_root.into_iter().map(|(from, names)| (name(from), names.into_iter().collect())).collect();
    assert_eq!(through, [("auth/grants.rs".to_owned(), vec!["Server".to_owned()])]);
}
