//! The layers of docs/architecture.md, kept by a test: every file of `src/` is read for
//! the items of probe it names (`use crate::…`, `use super::…`, a child module's name, and
//! `crate::a::b` paths in code; `#[cfg(test)]` modules left out), each name is resolved to
//! the file that defines it, and then
//! - an import from one room (a top-level module) to another must be allowed by the room's
//!   "may depend on" column in docs/architecture.md (the doc is the table; a backticked
//!   room named after the word "never" is not allowed), and
//! - no two files may reach each other through such imports (no cycle between files),
//! - no part may name the `mod.rs` of a folder it is in (a climb back to its facade),
//!   but for those [`FACADES_STILL_NAMED`] lists;
//!
//! and no function of `src/` (tests included) is longer than [`LONGEST_FUNCTION`] lines.
//!
//! The reader is a small tokenizer, not a Rust parser: it strips comments, strings and
//! character literals, then follows paths. It uses nothing but std, so it runs in well
//! under a second.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Imports that break a rule but are left in place on purpose, as (from file, to file).
/// Each entry says why; an entry that no longer matches an import fails the test, so the
/// list only shrinks.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// Whether an import is a folder's `mod.rs` naming one of its own parts. A facade declares
/// its parts and re-exports what they make (`pub use exchange::encode_exchange;`); the
/// cycle check reads that as containment, not as use, so a cycle is two files of which
/// neither is the other's facade reaching each other (`series` ⇄ `tally`, `html` ⇄ `svg`).
fn facade_of(from: &str, to: &str) -> bool {
    from.strip_suffix("/mod.rs")
        .is_some_and(|dir| to.starts_with(&format!("{dir}/")))
}

/// Whether an import is a part climbing back to the `mod.rs` of a folder it is in (its
/// own, or one further up): `store/v2/block.rs` naming `crate::store::StoreError` (a
/// re-export of `store/mod.rs`). A facade contains its parts, so a part that used it
/// would close a loop the cycle check does not see (it reads the facade's side as
/// containment); a part names the file that defines what it needs
/// (`crate::store::error::StoreError`) instead (issue 45).
fn climbs_to_facade(from: &str, to: &str) -> bool {
    to.strip_suffix("/mod.rs")
        .is_some_and(|dir| from != to && from.starts_with(&format!("{dir}/")))
}

/// Parts that still name their folder's `mod.rs`, as (the parts: a file, or a folder
/// ending in `/`; the facade they name; why). Each entry says why; an entry that no longer
/// matches a climb back fails the test, so the list only shrinks. The store's parts name
/// the files that define what they use (`error.rs`, `format.rs`, `object.rs`, `located.rs`,
/// ...), but for the facade itself.
const FACADES_STILL_NAMED: &[(&str, &str, &str)] = &[
    ("app/", "app/mod.rs", NOT_YET),
    ("engine/", "engine/mod.rs", NOT_YET),
    ("engine/series/", "engine/series/mod.rs", NOT_YET),
    ("generate/", "generate/mod.rs", NOT_YET),
    ("har/", "har/mod.rs", NOT_YET),
    ("mutate/", "mutate/mod.rs", NOT_YET),
    ("oracle/", "oracle/mod.rs", NOT_YET),
    ("replay/", "replay/mod.rs", NOT_YET),
    ("report/", "report/mod.rs", NOT_YET),
    ("schema/", "schema/mod.rs", NOT_YET),
    ("spec/", "spec/mod.rs", NOT_YET),
];

/// Why a folder other than the store still has parts that name its `mod.rs`.
const NOT_YET: &str = "its shared items (`app::Out`, `oracle::Observation`, `report::RunReport`, \
    error types, ...) are defined in its mod.rs; they move to files of their own as each folder is \
    next changed";

/// The entry of [`FACADES_STILL_NAMED`] that lets `from` name `to`, if any.
fn facade_still_named(
    from: &str,
    to: &str,
) -> Option<&'static (&'static str, &'static str, &'static str)> {
    FACADES_STILL_NAMED.iter().find(|(parts, facade, _)| {
        *facade == to
            && if parts.ends_with('/') {
                from.starts_with(parts)
            } else {
                from == *parts
            }
    })
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A file of `src/` as a module path: `store/mod.rs` → `store`, `store/v2/block.rs` →
/// `store::v2::block`, `lib.rs` → `` (the crate root).
fn module_of(rel: &str) -> String {
    let rel = rel.strip_suffix(".rs").unwrap();
    let rel = rel.strip_suffix("/mod").unwrap_or(rel);
    if rel == "lib" {
        return String::new();
    }
    rel.replace('/', "::")
}

/// The room of a module: its first segment (`store::v2::block` → `store`).
fn room_of(module: &str) -> &str {
    module.split("::").next().unwrap()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Comments, string and character literals replaced by spaces (lines kept), so that a
/// path in a doc comment or a message is never read as an import.
fn strip(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_'))
        {
            // A raw string: r"…", r#"…"#, …
            let mut j = i + 1;
            let mut hashes = 0;
            while j < b.len() && b[j] == '#' {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                out.push(blank(b[j]));
                j += 1;
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The modules a file declares under `#[cfg(test)]` (`mod tests;`): files of tests only.
fn test_modules(code: &str) -> Vec<String> {
    let toks = tokens(code);
    let attr: Vec<String> = tokens("#[cfg(test)]");
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if toks[i..].starts_with(&attr) {
            let rest = &toks[i + attr.len()..];
            let rest = if rest.first().map(String::as_str) == Some("pub") {
                &rest[1..]
            } else {
                rest
            };
            if rest.len() >= 3 && rest[0] == "mod" && rest[2] == ";" {
                out.push(rest[1].clone());
            }
        }
    }
    out
}

/// The text without its `#[cfg(test)]` items (test modules name what they test with).
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        // Skip to the end of the item: its `;`, or its `{ … }`, whichever comes first.
        let semi = after.find(';');
        let open = after.find('{');
        match (semi, open) {
            (Some(s), Some(o)) if s < o => rest = &after[s + 1..],
            (_, Some(o)) => {
                let mut depth = 0;
                let mut end = after.len();
                for (k, ch) in after[o..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = o + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &after[end..];
            }
            (Some(s), None) => rest = &after[s + 1..],
            (None, None) => rest = "",
        }
    }
    out.push_str(rest);
    out
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// The paths of a `use` tree starting at `toks[i]` (after `use`), each as its segments.
fn use_tree(toks: &[String], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        match toks.get(*i).map(String::as_str) {
            Some("{") => {
                *i += 1;
                loop {
                    use_tree(toks, i, path.clone(), out);
                    match toks.get(*i).map(String::as_str) {
                        Some(",") => *i += 1,
                        Some("}") => {
                            *i += 1;
                            return;
                        }
                        _ => return,
                    }
                    if toks.get(*i).map(String::as_str) == Some("}") {
                        *i += 1;
                        return;
                    }
                }
            }
            Some("::") => *i += 1,
            Some("*") => {
                *i += 1;
                out.push(path);
                return;
            }
            Some("as") => {
                *i += 2;
                out.push(path);
                return;
            }
            Some(t) if t.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                path.push(t.to_string());
                *i += 1;
            }
            _ => {
                out.push(path);
                return;
            }
        }
    }
}

/// Every path to an item of probe that a file's code names, as written (`crate::…`,
/// `super::…`, `self::…`, or starting with a child module's name in a `use`).
fn paths_named(code: &str) -> Vec<Vec<String>> {
    let toks = tokens(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        let before = if i > 0 { toks[i - 1].as_str() } else { "" };
        if t == "use" {
            i += 1;
            use_tree(&toks, &mut i, Vec::new(), &mut out);
        } else if (t == "crate" || t == "super")
            && toks.get(i + 1).map(String::as_str) == Some("::")
            && before != "::"
            && before != "in"
        {
            let mut path = vec![t.to_string()];
            i += 1;
            while toks.get(i).map(String::as_str) == Some("::") {
                match toks.get(i + 1) {
                    Some(n) if n.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                        path.push(n.clone());
                        i += 2;
                    }
                    _ => break,
                }
            }
            out.push(path);
        } else {
            i += 1;
        }
    }
    out
}

struct Graph {
    /// module path → file (relative to src/)
    files: BTreeMap<String, String>,
    /// file → (file it names → the first path naming it)
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

fn graph() -> Graph {
    let root = src();
    let mut all = Vec::new();
    rust_files(&root, &mut all);
    let mut files = BTreeMap::new();
    for path in &all {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "main.rs" {
            continue; // the binary: it uses the library as `probe::`
        }
        files.insert(module_of(&rel), rel);
    }
    // Files that only tests compile are left out, as test modules are.
    let mut test_only = Vec::new();
    for (module, rel) in &files {
        let code = strip(&std::fs::read_to_string(root.join(rel)).unwrap());
        for name in test_modules(&code) {
            test_only.push(if module.is_empty() {
                name
            } else {
                format!("{module}::{name}")
            });
        }
    }
    files.retain(|m, _| {
        !test_only
            .iter()
            .any(|t| m == t || m.starts_with(&format!("{t}::")))
    });
    let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (module, rel) in &files {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        let code = without_tests(&strip(&text));
        let here: Vec<&str> = if module.is_empty() {
            vec![]
        } else {
            module.split("::").collect()
        };
        let mine = edges.entry(rel.clone()).or_default();
        for path in paths_named(&code) {
            // Make the path absolute (segments from the crate root).
            let mut abs: Vec<String> = Vec::new();
            let mut segs = path.as_slice();
            match segs.first().map(String::as_str) {
                Some("crate") => segs = &segs[1..],
                Some("self") => {
                    abs.extend(here.iter().map(|s| s.to_string()));
                    segs = &segs[1..];
                }
                Some("super") => {
                    let mut base: Vec<&str> = here.clone();
                    while segs.first().map(String::as_str) == Some("super") {
                        base.pop();
                        segs = &segs[1..];
                    }
                    abs.extend(base.iter().map(|s| s.to_string()));
                }
                Some(first) => {
                    // A child module named from its parent (`use exchange::encode;`).
                    let mut child: Vec<String> = here.iter().map(|s| s.to_string()).collect();
                    child.push(first.to_string());
                    if !files.contains_key(&child.join("::")) {
                        continue; // std, a dependency, or a local item
                    }
                    abs.extend(here.iter().map(|s| s.to_string()));
                }
                None => continue,
            }
            abs.extend(segs.iter().cloned());
            // The longest prefix that is a file of src/.
            let target = (0..=abs.len())
                .rev()
                .map(|n| abs[..n].join("::"))
                .find(|m| files.contains_key(m));
            let Some(target) = target else { continue };
            let to = &files[&target];
            if to != rel {
                mine.entry(to.clone()).or_insert_with(|| path.join("::"));
            }
        }
    }
    Graph { files, edges }
}

/// The rooms of docs/architecture.md's table and, for each, the rooms it may depend on
/// (`None`: everything).
fn layers() -> BTreeMap<String, Option<BTreeSet<String>>> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let backticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    let mut rows = Vec::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() != 5 || cells[1] == "module" || cells[1].starts_with("---") {
            continue;
        }
        let rooms: Vec<String> = backticked(cells[1])
            .iter()
            .map(|r| r.trim_end_matches('/').trim_end_matches(".rs").to_string())
            .collect();
        rows.push((rooms, cells[3].to_string()));
    }
    let known: BTreeSet<String> = rows.iter().flat_map(|(r, _)| r.clone()).collect();
    let mut out = BTreeMap::new();
    for (rooms, may) in rows {
        let allowed = if may.starts_with("everything") {
            None
        } else {
            // "never `engine`, `store` or `oracle`": what follows "never", up to the end
            // of its clause, is what the room must not use.
            let mut allowed_text = String::new();
            let mut rest = may.as_str();
            while let Some(at) = rest.find("never") {
                allowed_text.push_str(&rest[..at]);
                let clause = &rest[at..];
                let end = clause.find([')', ';']).unwrap_or(clause.len());
                rest = &clause[end..];
            }
            allowed_text.push_str(rest);
            Some(
                backticked(&allowed_text)
                    .iter()
                    .map(|p| p.split("::").next().unwrap().to_string())
                    .filter(|r| known.contains(r))
                    .collect::<BTreeSet<_>>(),
            )
        };
        for room in rooms {
            out.insert(room, allowed.clone());
        }
    }
    out
}

/// The strongly connected components of more than one file (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(next) = t.edges.get(v) {
            for w in next.keys() {
                let w = w.as_str();
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut scc = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                scc.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if scc.len() > 1 {
                scc.sort();
                t.out.push(scc);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn imports_keep_the_layers_of_architecture_md_and_make_no_cycle() {
    let g = graph();
    let layers = layers();
    let mut problems = Vec::new();
    let mut allowed_used = BTreeSet::new();
    let room_of_file = |rel: &str| -> String {
        let m = g
            .files
            .iter()
            .find(|(_, f)| f.as_str() == rel)
            .map(|(m, _)| m.clone())
            .unwrap();
        room_of(&m).to_string()
    };
    for (from, tos) in &g.edges {
        let room = room_of_file(from);
        if room.is_empty() {
            continue; // lib.rs declares the rooms
        }
        let Some(allowed) = layers.get(&room) else {
            problems.push(format!(
                "src/{from}: room `{room}` has no row in docs/architecture.md"
            ));
            continue;
        };
        for (to, path) in tos {
            let target = room_of_file(to);
            if target == room || target.is_empty() {
                continue;
            }
            if let Some(allowed) = allowed {
                if !allowed.contains(&target) {
                    if let Some(a) = ALLOWED.iter().find(|(f, t, _)| *f == from && *t == to) {
                        allowed_used.insert(*a);
                        continue;
                    }
                    problems.push(format!(
                        "src/{from}: `{path}` climbs out of `{room}` into `{target}` (src/{to}), which docs/architecture.md does not allow it"
                    ));
                }
            }
        }
    }
    let mut facades_used = BTreeSet::new();
    for (from, tos) in &g.edges {
        for (to, path) in tos {
            if climbs_to_facade(from, to) {
                if let Some(entry) = facade_still_named(from, to) {
                    facades_used.insert(entry);
                    continue;
                }
                problems.push(format!(
                    "src/{from}: `{path}` climbs back to its folder's facade src/{to}; name the file that defines it"
                ));
            }
        }
    }
    let uses: BTreeMap<String, BTreeMap<String, String>> = g
        .edges
        .iter()
        .map(|(from, tos)| {
            let tos = tos
                .iter()
                .filter(|(to, _)| !facade_of(from, to))
                .map(|(t, p)| (t.clone(), p.clone()));
            (from.clone(), tos.collect())
        })
        .collect();
    for scc in cycles(&uses) {
        // Name the imports that close the cycle: those between files of it.
        let inside: Vec<String> = scc
            .iter()
            .flat_map(|f| {
                uses[f]
                    .iter()
                    .filter(|(to, _)| scc.contains(to))
                    .map(move |(to, path)| format!("src/{f} → src/{to} (`{path}`)"))
            })
            .collect();
        problems.push(format!(
            "a cycle between {} files: {}",
            scc.len(),
            inside.join("; ")
        ));
    }
    // Rooms too: two rooms that use each other are no layers, whatever the table says.
    let mut between_rooms: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (from, tos) in &g.edges {
        let room = room_of_file(from);
        for (to, path) in tos {
            let target = room_of_file(to);
            if room.is_empty() || target.is_empty() || target == room {
                continue;
            }
            between_rooms
                .entry(room.clone())
                .or_default()
                .entry(target)
                .or_insert_with(|| format!("src/{from}: `{path}`"));
        }
    }
    for scc in cycles(&between_rooms) {
        let inside: Vec<String> = scc
            .iter()
            .flat_map(|r| {
                between_rooms[r]
                    .iter()
                    .filter(|(to, _)| scc.contains(to))
                    .map(move |(to, first)| format!("`{r}` → `{to}` ({first})"))
            })
            .collect();
        problems.push(format!(
            "a cycle between {} rooms: {}",
            scc.len(),
            inside.join("; ")
        ));
    }
    for entry in FACADES_STILL_NAMED {
        if !facades_used.contains(entry) {
            problems.push(format!(
                "FACADES_STILL_NAMED lists {} naming src/{}, which no longer happens: remove it",
                entry.0, entry.1
            ));
        }
    }
    for a in ALLOWED {
        if !allowed_used.contains(a) {
            problems.push(format!(
                "ALLOWED lists src/{} → src/{}, which no longer breaks a rule: remove it",
                a.0, a.1
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Functions longer than this are split into named steps (issue 45): a reader holds one in
/// view, and a change to one step cannot reach the others by accident.
const LONGEST_FUNCTION: usize = 150;

/// Every `fn` of `src/` (tests too) and how many lines it spans, from its `fn` line to the
/// line of its closing brace, as (file, line, name, lines).
fn function_lengths() -> Vec<(String, usize, String, usize)> {
    let root = src();
    let mut all = Vec::new();
    rust_files(&root, &mut all);
    all.sort();
    let mut out = Vec::new();
    for path in all {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let code = strip(&std::fs::read_to_string(&path).unwrap());
        let chars: Vec<char> = code.chars().collect();
        let line_at = |at: usize| 1 + chars[..at].iter().filter(|c| **c == '\n').count();
        let word_at = |at: usize, word: &str| {
            let w: Vec<char> = word.chars().collect();
            chars[at..].starts_with(&w)
                && (at == 0 || !(chars[at - 1].is_alphanumeric() || chars[at - 1] == '_'))
                && chars.get(at + w.len()).is_some_and(|c| c.is_whitespace())
        };
        let mut i = 0;
        while i < chars.len() {
            if !word_at(i, "fn") {
                i += 1;
                continue;
            }
            let mut j = i + 2;
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            let name: String = chars[j..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '_')
                .collect();
            // The body opens at the first `{` outside the signature's brackets; a `;`
            // first means a declaration without a body (a trait's).
            let (mut parens, mut k) = (0i32, j);
            let open = loop {
                match chars.get(k) {
                    None => break None,
                    Some('(' | '[' | '<') => parens += 1,
                    Some(')' | ']') => parens -= 1,
                    Some('>') if chars.get(k - 1) != Some(&'-') => parens -= 1,
                    Some(';') if parens <= 0 => break None,
                    Some('{') if parens <= 0 => break Some(k),
                    _ => {}
                }
                k += 1;
            };
            let Some(open) = open else {
                i = j;
                continue;
            };
            let mut depth = 0;
            let mut close = open;
            for (n, c) in chars[open..].iter().enumerate() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            close = open + n;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let first = line_at(i);
            out.push((rel.clone(), first, name, line_at(close) - first + 1));
            // Nested functions are counted too: carry on inside this body.
            i = open + 1;
        }
    }
    out
}

#[test]
fn no_function_is_longer_than_150_lines() {
    let mut lengths = function_lengths();
    // The five longest, for a closing note (`-- --nocapture`).
    lengths.sort_by_key(|(_, _, _, lines)| std::cmp::Reverse(*lines));
    for (file, line, name, lines) in lengths.iter().take(5) {
        eprintln!("longest: src/{file}:{line} `{name}`: {lines} lines");
    }
    let long: Vec<String> = lengths
        .into_iter()
        .filter(|(_, _, _, lines)| *lines > LONGEST_FUNCTION)
        .map(|(file, line, name, lines)| format!("src/{file}:{line} `{name}`: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "{} functions are longer than {LONGEST_FUNCTION} lines; split each into named steps:\n{}",
        long.len(),
        long.join("\n")
    );
}
