//! The file-level import graph of one crate (see the parent module for what makes an edge).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Item, UseTree};

/// A crate's file-level import graph.
#[derive(Debug, Default)]
pub struct Graph {
    pub files: Vec<PathBuf>,
    /// `(from, to)` → the names `from` uses of `to`.
    pub edges: BTreeMap<(usize, usize), BTreeSet<String>>,
}

/// Builds the graph of the crate whose root file is `root`; `read` gives a file's text (`None`: no
/// such file, as for a module declared behind a `#[path]` that is not there).
pub fn graph(root: &Path, read: &dyn Fn(&Path) -> Option<String>) -> anyhow::Result<Graph> {
    let mut loader = Loader { read, parsed: Vec::new(), modules: BTreeMap::new() };
    let dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
    loader.load(root, Vec::new(), dir)?;
    let (mut own, mut globs) = (BTreeMap::new(), BTreeMap::new());
    for (_, syntax, module) in &loader.parsed {
        declared_names(&syntax.items, module, &loader.modules, &mut own, &mut globs);
    }
    let mut names = own.clone();
    // A glob brings its target's names, which a `use super::*` below reaches in turn.
    let mut grew = true;
    while grew {
        grew = false;
        for (module, targets) in &globs {
            let reached: Vec<String> =
                targets.iter().filter_map(|target| names.get(target)).flatten().cloned().collect();
            let own: &mut BTreeSet<String> = names.entry(module.clone()).or_default();
            let before = own.len();
            own.extend(reached);
            grew |= own.len() > before;
        }
    }
    let mut graph =
        Graph { files: loader.parsed.iter().map(|(path, _, _)| path.clone()).collect(), ..Graph::default() };
    for (file, (_, syntax, module)) in loader.parsed.iter().enumerate() {
        let mut scan = Scan { modules: &loader.modules, names: &names, own: &own, file, edges: &mut graph.edges };
        scan.items(&syntax.items, module);
    }
    Ok(graph)
}

struct Loader<'a> {
    read: &'a dyn Fn(&Path) -> Option<String>,
    /// Each file with its syntax and its module path.
    parsed: Vec<(PathBuf, syn::File, Vec<String>)>,
    /// Every module path (inline modules too) → the file it is in.
    modules: Modules,
}

impl Loader<'_> {
    /// Loads a module's file; `dir` is where its `mod x;` children are.
    fn load(&mut self, path: &Path, module: Vec<String>, dir: PathBuf) -> anyhow::Result<()> {
        let Some(text) = (self.read)(path) else { return Ok(()) };
        let syntax = syn::parse_file(&text).map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
        let file = self.parsed.len();
        self.modules.insert(module.clone(), file);
        let items = syntax.items.clone();
        self.parsed.push((path.to_path_buf(), syntax, module.clone()));
        let file_dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        self.declare(&items, &module, &dir, &file_dir, file)
    }

    fn declare(
        &mut self,
        items: &[Item],
        module: &[String],
        dir: &Path,
        file_dir: &Path,
        file: usize,
    ) -> anyhow::Result<()> {
        for item in items {
            let Item::Mod(declared) = item else { continue };
            let name = declared.ident.to_string();
            let child = [module, std::slice::from_ref(&name)].concat();
            let at =
                declared.attrs.iter().find(|attr| attr.path().is_ident("path")).and_then(|attr| match &attr.meta {
                    syn::Meta::NameValue(syn::MetaNameValue {
                        value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(at), .. }),
                        ..
                    }) => Some(at.value()),
                    _ => None,
                });
            if let Some((_, content)) = &declared.content {
                self.modules.insert(child.clone(), file);
                self.declare(content, &child, &dir.join(&name), file_dir, file)?;
            } else if let Some(at) = at {
                // `#[path]` outside inline modules is relative to the declaring file's directory;
                // the file it names keeps its children beside it, as a `mod.rs` does.
                let path = normalize(&file_dir.join(at));
                let children = path.parent().unwrap_or(Path::new("")).to_path_buf();
                self.load(&path, child, children)?;
            } else {
                let flat = dir.join(format!("{name}.rs"));
                let path = if (self.read)(&flat).is_some() { flat } else { dir.join(&name).join("mod.rs") };
                self.load(&path, child, dir.join(&name))?;
            }
        }
        Ok(())
    }
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir if matches!(out.components().next_back(), Some(Component::Normal(_))) => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

type Modules = BTreeMap<Vec<String>, usize>;

/// Names a module scope gives to other modules through `use` (`use crate::auth;` → `auth`), so
/// that `auth::flow::X` later in its code resolves to `auth/flow.rs`.
type Aliases = BTreeMap<String, Vec<String>>;

/// What each module scope declares or imports from this crate: what a `use that::*` can reach.
fn declared_names(
    items: &[Item],
    module: &[String],
    modules: &Modules,
    names: &mut BTreeMap<Vec<String>, BTreeSet<String>>,
    globs: &mut BTreeMap<Vec<String>, Vec<Vec<String>>>,
) {
    let mut own = BTreeSet::new();
    for item in items {
        let ident = match item {
            Item::Const(item) => Some(&item.ident),
            Item::Enum(item) => Some(&item.ident),
            Item::Fn(item) => Some(&item.sig.ident),
            Item::Macro(item) => item.ident.as_ref(),
            Item::Mod(item) => {
                if let Some((_, content)) = &item.content {
                    declared_names(content, &[module, &[item.ident.to_string()]].concat(), modules, names, globs);
                }
                // A module reached through a glob is an alias (see `Scan::items`), not a name: a
                // field or variable of the same name would pass for it.
                None
            }
            Item::Static(item) => Some(&item.ident),
            Item::Struct(item) => Some(&item.ident),
            Item::Trait(item) => Some(&item.ident),
            Item::Type(item) => Some(&item.ident),
            Item::Union(item) => Some(&item.ident),
            Item::Use(used) => {
                let mut uses = Vec::new();
                flatten(&used.tree, &mut Vec::new(), &mut uses);
                for (path, alias) in uses {
                    let Some(target) = absolute(modules, &path, module, &Aliases::new()) else { continue };
                    match alias {
                        Some(alias) => _ = own.insert(alias),
                        None => globs.entry(module.to_vec()).or_default().push(target[..target.len() - 1].to_vec()),
                    }
                }
                None
            }
            _ => None,
        };
        own.extend(ident.map(ToString::to_string));
    }
    names.entry(module.to_vec()).or_default().extend(own);
}

/// `path` as seen from `module`, from the crate root; `None` for other crates' paths.
fn absolute(modules: &Modules, path: &[String], module: &[String], aliases: &Aliases) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some([module, &path[1..]].concat()),
        "super" => {
            let up = path.iter().take_while(|segment| *segment == "super").count();
            Some([&module[..module.len().checked_sub(up)?], &path[up..]].concat())
        }
        _ if modules.contains_key(&[module, std::slice::from_ref(first)].concat()) => Some([module, path].concat()),
        _ => aliases.get(first).map(|target| [target, &path[1..]].concat()),
    }
}

/// Macros whose bodies are code for another crate (the generator's output): their paths are not
/// this crate's.
const FOREIGN_MACROS: [&str; 3] = ["quote", "quote_spanned", "parse_quote"];

struct Scan<'a> {
    modules: &'a Modules,
    /// What a glob into each module reaches.
    names: &'a BTreeMap<Vec<String>, BTreeSet<String>>,
    /// What each module declares or imports by name (it shadows what its globs bring).
    own: &'a BTreeMap<Vec<String>, BTreeSet<String>>,
    file: usize,
    edges: &'a mut BTreeMap<(usize, usize), BTreeSet<String>>,
}

impl Scan<'_> {
    fn items(&mut self, items: &[Item], module: &[String]) {
        let mut uses = Vec::new();
        let mut code = TokenStream::new();
        for item in items {
            match item {
                // A `pub use that::*` re-exports all of `that`: an edge whatever the code mentions.
                Item::Use(used) if !matches!(used.vis, syn::Visibility::Inherited) => {
                    let mut public = Vec::new();
                    flatten(&used.tree, &mut Vec::new(), &mut public);
                    public.iter().for_each(|(path, _)| self.reference(path, module, &Aliases::new()));
                }
                Item::Use(used) => flatten(&used.tree, &mut Vec::new(), &mut uses),
                Item::Mod(declared) => {
                    if let Some((_, content)) = &declared.content {
                        self.items(content, &[module, &[declared.ident.to_string()]].concat());
                    }
                }
                other => code.extend(other.to_token_stream()),
            }
        }
        let mut aliases = Aliases::new();
        for (path, alias) in &uses {
            if let (Some(target), Some(alias)) = (absolute(self.modules, path, module, &Aliases::new()), alias)
                && self.modules.contains_key(&target)
            {
                aliases.insert(alias.clone(), target);
            }
            // `use that::*` brings `that`'s modules: `sibling::X` through it names `sibling`.
            if let Some(target) = absolute(self.modules, path, module, &Aliases::new())
                && path.last().is_some_and(|last| last == "*")
            {
                let target = &target[..target.len() - 1];
                let children =
                    self.modules.keys().filter(|child| child.len() == target.len() + 1 && child.starts_with(target));
                for child in children {
                    aliases.entry(child[target.len()].clone()).or_insert_with(|| child.clone());
                }
            }
        }
        let mut idents = BTreeSet::new();
        self.tokens(code, module, &aliases, &mut idents);
        for (path, alias) in &uses {
            if alias.as_ref().is_some_and(|alias| aliases.contains_key(alias)) {
                // A module imported by name is no edge by itself: the paths through it are.
                continue;
            }
            let glob = absolute(self.modules, path, module, &aliases).filter(|target| {
                path.last().is_some_and(|last| last == "*") && self.modules.contains_key(&target[..target.len() - 1])
            });
            match glob {
                // `use that::*` names of `that` what the scope's code mentions of its items, less
                // what the scope declares or imports itself (those shadow the glob).
                Some(target) => {
                    let target = &target[..target.len() - 1];
                    let own = self.own.get(module);
                    let used = |name: &&String| idents.contains(*name) && !own.is_some_and(|own| own.contains(*name));
                    for name in self.names.get(target).into_iter().flatten().filter(used) {
                        let path = [&["crate".to_owned()], target, std::slice::from_ref(name)].concat();
                        self.reference(&path, module, &aliases);
                    }
                }
                None => self.reference(path, module, &aliases),
            }
        }
    }

    /// Finds the paths in code: `use` statements in bodies, and `crate::`, `$crate::`, `super::`,
    /// `self::`, child-module and alias paths (not themselves after `::`); collects every ident.
    fn tokens(&mut self, tokens: TokenStream, module: &[String], aliases: &Aliases, idents: &mut BTreeSet<String>) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let colons = |at: usize| {
            matches!((tokens.get(at), tokens.get(at + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && b.as_char() == ':')
        };
        let mut at = 0;
        while at < tokens.len() {
            match &tokens[at] {
                TokenTree::Group(group) => self.tokens(group.stream(), module, aliases, idents),
                TokenTree::Ident(ident)
                    if FOREIGN_MACROS.iter().any(|name| ident == name)
                        && matches!(tokens.get(at + 1), Some(TokenTree::Punct(bang)) if bang.as_char() == '!') =>
                {
                    at += 2; // the `!` and the body
                }
                TokenTree::Ident(ident) if ident == "use" => {
                    let end = (at..tokens.len())
                        .find(|&end| matches!(&tokens[end], TokenTree::Punct(p) if p.as_char() == ';'))
                        .unwrap_or(tokens.len() - 1);
                    let statement: TokenStream = tokens[at..=end].iter().cloned().collect();
                    if let Ok(used) = syn::parse2::<syn::ItemUse>(statement) {
                        let mut uses = Vec::new();
                        flatten(&used.tree, &mut Vec::new(), &mut uses);
                        for (path, _) in uses {
                            self.reference(&path, module, aliases);
                        }
                        at = end;
                    }
                }
                TokenTree::Ident(ident) => {
                    idents.insert(ident.to_string());
                    if colons(at + 1) && (at < 2 || !colons(at - 2)) {
                        let mut path = vec![ident.to_string()];
                        let mut next = at + 1;
                        while colons(next)
                            && let Some(TokenTree::Ident(segment)) = tokens.get(next + 2)
                        {
                            path.push(segment.to_string());
                            next += 3;
                        }
                        self.reference(&path, module, aliases);
                    }
                }
                _ => {}
            }
            at += 1;
        }
    }

    /// An edge to the deepest declared module along `path`, named by the segment after it.
    fn reference(&mut self, path: &[String], module: &[String], aliases: &Aliases) {
        let Some(absolute) = absolute(self.modules, path, module, aliases) else { return };
        let deepest = (0..=absolute.len()).rev().find(|&depth| self.modules.contains_key(&absolute[..depth]));
        let Some(depth) = deepest else { return };
        let to = self.modules[&absolute[..depth]];
        if to != self.file {
            let name = absolute.get(depth).or(absolute.last()).map_or("crate", String::as_str);
            self.edges.entry((self.file, to)).or_default().insert(name.to_owned());
        }
    }
}

/// A `use` tree's leaves: each path (ending in the name, or `*`) with the name it binds.
fn flatten(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten(&path.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(name) if name.ident == "self" => out.push((prefix.clone(), prefix.last().cloned())),
        UseTree::Name(name) => {
            out.push(([&prefix[..], &[name.ident.to_string()]].concat(), Some(name.ident.to_string())))
        }
        UseTree::Rename(rename) => {
            let path = if rename.ident == "self" {
                prefix.clone()
            } else {
                [&prefix[..], &[rename.ident.to_string()]].concat()
            };
            out.push((path, Some(rename.rename.to_string())));
        }
        UseTree::Glob(_) => out.push(([&prefix[..], &["*".to_owned()]].concat(), None)),
        UseTree::Group(group) => group.items.iter().for_each(|tree| flatten(tree, prefix, out)),
    }
}
