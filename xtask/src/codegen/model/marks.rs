//! Passes over the built items: which members are free-form through an alias, and which
//! structs can derive `Default`.

use super::*;

impl Builder<'_> {
    /// The module's aliases and the types they name.
    fn aliases(&self) -> HashMap<String, Ty> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Alias(a) => Some((a.name.clone(), a.ty.clone())),
                _ => None,
            })
            .collect()
    }

    /// Members typed by an alias of free-form JSON (2026-07-28's `JSONValue`, `JSONObject`,
    /// `JSONArray`, `MetaObject`) are marked, so that they are decoded like every free-form
    /// member: numbers kept exactly or refused, never silently changed.
    pub(super) fn mark_free_form_aliases(&mut self) {
        let aliases = self.aliases();
        fn free_form(ty: &Ty, aliases: &HashMap<String, Ty>, depth: usize) -> bool {
            match ty {
                Ty::Value | Ty::Object => true,
                Ty::Vec(inner) | Ty::Map(inner) => free_form(inner, aliases, depth),
                Ty::Named(n) if depth < 8 => aliases.get(n).is_some_and(|t| free_form(t, aliases, depth + 1)),
                _ => false,
            }
        }
        for item in &mut self.items {
            match item {
                Item::Struct(s) => s.fields.iter_mut().for_each(|f| f.free_form_alias = free_form(&f.ty, &aliases, 0)),
                Item::Union(u) => u.variants.iter_mut().for_each(|v| v.free_form_alias = free_form(&v.ty, &aliases, 0)),
                _ => {}
            }
        }
    }

    /// Structs whose required members all have a default derive `Default`, to a fixed point.
    pub(super) fn mark_defaults(&mut self) {
        let aliases = self.aliases();
        let mut defaultable: BTreeSet<String> = BTreeSet::new();
        loop {
            let mut changed = false;
            let snapshot = defaultable.clone();
            let is_default = |ty: &Ty| -> bool {
                fn go(ty: &Ty, d: &BTreeSet<String>, aliases: &HashMap<String, Ty>, depth: usize) -> bool {
                    match ty {
                        Ty::String | Ty::Bool | Ty::Value | Ty::Object | Ty::Vec(_) | Ty::Map(_) => true,
                        Ty::Number => false,
                        Ty::Path(p) => {
                            matches!(
                                *p,
                                "crate::ResultType" | "crate::ObjectSchema" | "crate::ErrorObject" | "crate::Integer"
                            )
                        }
                        Ty::Named(n) => {
                            d.contains(n) || (depth < 8 && aliases.get(n).is_some_and(|t| go(t, d, aliases, depth + 1)))
                        }
                        Ty::Boxed(inner) => go(inner, d, aliases, depth),
                    }
                }
                go(ty, &snapshot, &aliases, 0)
            };
            for item in &mut self.items {
                if let Item::Struct(s) = item
                    && !s.default
                    && !s.fields.iter().any(|f| f.constructor_arg)
                    && s.fields.iter().filter(|f| f.required && !f.nullable).all(|f| is_default(&f.ty))
                {
                    s.default = true;
                    defaultable.insert(s.name.clone());
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }
}
