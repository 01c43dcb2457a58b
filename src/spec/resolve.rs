//! `$ref` resolution: the documents a description spans, references between them, and the
//! shared-schema set every schema reference is rewritten into.
//!
//! Each file is read once (a cache keyed by canonical path). A reference to a schema gets one
//! entry in the set, found again through a memo, so a recursive shape becomes a cycle through
//! the set rather than an infinite value; the entry's content is converted later from a work
//! queue, which keeps the stack flat however long a chain of schemas is. References to other
//! objects (parameters, responses, ...) are followed and the target read in place.
//!
//! Depends on nothing else in probe.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use percent_encoding::percent_decode_str;
use serde_json::Value;

use super::error::SpecError;
use super::load;
use super::model::{SchemaSet, SpecVersion};

/// Most references followed from one place before giving up on a chain.
const MAX_CHAIN: usize = 64;

/// One file of the description.
pub(crate) struct Doc {
    /// As shown in messages: the source given for the main document, the path for others.
    pub name: String,
    /// Where relative references inside it point; `None` for a document with no directory
    /// (bytes given without one).
    pub dir: Option<Base>,
    pub root: Value,
}

/// What relative references of a document are resolved against.
#[derive(Clone, Debug)]
pub(crate) enum Base {
    Dir(PathBuf),
    /// A document fetched from a URL: its references are fetched too.
    Url(url::Url),
    /// A document rebuilt from a store: its references are looked up among the other
    /// files stored beside it ([`Ctx::files`] keys), never read or fetched.
    Stored(StoredBase, Rc<BTreeMap<String, Vec<u8>>>),
}

/// Where a stored document sat: a directory key (`""` for the main document's directory,
/// `schemas` for one below it) or the URL it was fetched from.
#[derive(Clone, Debug)]
pub(crate) enum StoredBase {
    Dir(String),
    Url(url::Url),
}

/// `dir/file` with `.` and `..` taken out lexically, `/`-separated: the key a referenced
/// file is stored under. Leading `..` are kept (a file beside the main document's
/// directory).
pub(crate) fn join_key(dir: &str, file: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in dir.split('/').chain(file.split('/')) {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// The key of a file read from disk: its canonical path relative to the main document's
/// canonical directory, `/`-separated (with `..` where it lies outside).
fn relative_key(main_dir: &Path, canonical: &Path) -> String {
    let from: Vec<_> = main_dir.components().collect();
    let to: Vec<_> = canonical.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - common];
    parts.extend(
        to[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// A JSON pointer built up while walking, formatted only when a message needs it.
#[derive(Clone, Copy)]
pub(crate) enum Ptr<'a> {
    Root(&'a str),
    Key(&'a Ptr<'a>, &'a str),
    Idx(&'a Ptr<'a>, usize),
}

impl<'a> Ptr<'a> {
    pub fn key(&'a self, k: &'a str) -> Ptr<'a> {
        Ptr::Key(self, k)
    }
    pub fn idx(&'a self, i: usize) -> Ptr<'a> {
        Ptr::Idx(self, i)
    }
}

impl fmt::Display for Ptr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ptr::Root(s) => f.write_str(s),
            Ptr::Key(p, k) => {
                write!(f, "{p}/")?;
                // Escaped as written, without building a string per token.
                if k.contains(['~', '/']) {
                    f.write_str(&escape_token(k))
                } else {
                    f.write_str(k)
                }
            }
            Ptr::Idx(p, i) => write!(f, "{p}/{i}"),
        }
    }
}

/// JSON-pointer escaping of one token.
pub(crate) fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// A schema that a reference names, converted (or failed) once.
pub(crate) struct DefSlot {
    pub key: String,
    pub doc: usize,
    pub pointer: String,
    pub value: Option<Value>,
    /// Why its conversion failed (a dangling reference inside it, ...).
    pub error: Option<String>,
    /// Entries its content refers to directly.
    pub edges: Vec<usize>,
}

/// Everything the loader knows while it walks one description.
pub(crate) struct Ctx {
    pub dialect: SpecVersion,
    pub docs: Vec<Rc<Doc>>,
    /// Documents already read, by canonical path or URL.
    by_path: HashMap<String, usize>,
    memo: HashMap<(usize, String), usize>,
    follow_memo: HashMap<(usize, String), (usize, String)>,
    pub defs: Vec<DefSlot>,
    used_keys: HashSet<String>,
    suffixes: HashMap<String, usize>,
    queue: VecDeque<usize>,
    /// Entries referred to by the schema being converted now.
    pub refs_out: Vec<usize>,
    /// The bytes of every other file read or fetched (not those opened from a stored set),
    /// by key (see [`StoredBase`]): what a store keeps so that the description can be
    /// rebuilt without them.
    pub files: BTreeMap<String, Vec<u8>>,
    /// The main document's directory, canonical, for the keys of files read from disk.
    main_dir: Option<PathBuf>,
}

impl Ctx {
    pub fn new(dialect: SpecVersion, main: Doc) -> Ctx {
        let main_dir = match &main.dir {
            Some(Base::Dir(d)) => d.canonicalize().ok(),
            _ => None,
        };
        Ctx {
            files: BTreeMap::new(),
            main_dir,
            dialect,
            docs: vec![Rc::new(main)],
            by_path: HashMap::new(),
            memo: HashMap::new(),
            follow_memo: HashMap::new(),
            defs: Vec::new(),
            used_keys: HashSet::new(),
            suffixes: HashMap::new(),
            queue: VecDeque::new(),
            refs_out: Vec::new(),
        }
    }

    pub fn doc(&self, d: usize) -> Rc<Doc> {
        Rc::clone(&self.docs[d])
    }

    /// The document and pointer a reference written in document `doc` names.
    fn locate(&mut self, doc: usize, reference: &str) -> Result<(usize, String), String> {
        let (file, fragment) = match reference.find('#') {
            Some(i) => (&reference[..i], &reference[i + 1..]),
            None => (reference, ""),
        };
        let fragment = percent_decode_str(fragment)
            .decode_utf8_lossy()
            .into_owned();
        if !fragment.is_empty() && !fragment.starts_with('/') {
            return Err(format!(
                "reference `{reference}` is not a JSON pointer (anchors are not supported)"
            ));
        }
        if file.is_empty() {
            return Ok((doc, fragment));
        }
        let opened = match self.docs[doc].dir.clone() {
            Some(Base::Url(base)) => match base.join(file) {
                Ok(url) if matches!(url.scheme(), "http" | "https") => self.fetch(url),
                _ => {
                    return Err(format!(
                        "reference `{reference}` is not a URL relative to {base}"
                    ))
                }
            },
            Some(Base::Dir(_)) if load::is_url(file) => {
                // A local document does not make probe go to the network.
                return Err(format!(
                    "reference `{reference}` is remote; a document read from a file may refer to files only"
                ));
            }
            Some(Base::Dir(dir)) => {
                let file = percent_decode_str(file).decode_utf8_lossy().into_owned();
                self.open(&dir.join(&file))
            }
            Some(Base::Stored(StoredBase::Dir(dir), files)) => {
                let file = percent_decode_str(file).decode_utf8_lossy().into_owned();
                self.open_stored(join_key(&dir, &file), None, &files)
            }
            Some(Base::Stored(StoredBase::Url(base), files)) => match base.join(file) {
                Ok(mut url) => {
                    url.set_fragment(None);
                    self.open_stored(url.to_string(), Some(url), &files)
                }
                Err(_) => {
                    return Err(format!(
                        "reference `{reference}` is not a URL relative to {base}"
                    ))
                }
            },
            None => {
                return Err(format!(
                    "reference `{reference}` names another file, but the document has no directory to find it in"
                ))
            }
        };
        let d = opened.map_err(|e| {
            format!("reference `{reference}` names a document that cannot be used: {e}")
        })?;
        Ok((d, fragment))
    }

    /// Reads another file once.
    fn open(&mut self, path: &Path) -> Result<usize, SpecError> {
        let canonical = path.canonicalize().map_err(|error| SpecError::Read {
            path: path.display().to_string(),
            error,
        })?;
        let cache_key = canonical.display().to_string();
        if let Some(&d) = self.by_path.get(&cache_key) {
            return Ok(d);
        }
        let name = path.display().to_string();
        let bytes = load::read_file(&canonical)?;
        let root = load::parse_value(&bytes, &name)?;
        if let Some(main_dir) = &self.main_dir {
            self.files.insert(relative_key(main_dir, &canonical), bytes);
        }
        Ok(self.add(
            cache_key,
            name,
            Some(Base::Dir(load::dir_of(&canonical))),
            root,
        ))
    }

    /// Fetches another document once (references of a document that came from a URL).
    fn fetch(&mut self, mut url: url::Url) -> Result<usize, SpecError> {
        url.set_fragment(None);
        let cache_key = url.to_string();
        if let Some(&d) = self.by_path.get(&cache_key) {
            return Ok(d);
        }
        let bytes = load::fetch_blocking(url.as_str())?;
        let root = load::parse_value(&bytes, url.as_str())?;
        self.files.insert(cache_key.clone(), bytes);
        Ok(self.add(cache_key.clone(), cache_key, Some(Base::Url(url)), root))
    }

    /// Opens another file from the stored set, once.
    fn open_stored(
        &mut self,
        key: String,
        url: Option<url::Url>,
        files: &Rc<BTreeMap<String, Vec<u8>>>,
    ) -> Result<usize, SpecError> {
        if let Some(&d) = self.by_path.get(&key) {
            return Ok(d);
        }
        let Some(bytes) = files.get(&key) else {
            return Err(SpecError::Read {
                path: key,
                error: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "not among the files stored with the run",
                ),
            });
        };
        // Not added to `files`: what was stored is kept by its blob already.
        let root = load::parse_value(bytes, &key)?;
        let base = match url {
            Some(url) => StoredBase::Url(url),
            None => StoredBase::Dir(match key.rfind('/') {
                Some(i) => key[..i].to_owned(),
                None => String::new(),
            }),
        };
        Ok(self.add(
            key.clone(),
            key,
            Some(Base::Stored(base, Rc::clone(files))),
            root,
        ))
    }

    fn add(&mut self, cache_key: String, name: String, dir: Option<Base>, root: Value) -> usize {
        let d = self.docs.len();
        self.docs.push(Rc::new(Doc { name, dir, root }));
        self.by_path.insert(cache_key, d);
        d
    }

    /// Follows `reference` (written at `at` in document `doc`) until an object with content.
    /// For schemas, a reference whose only siblings are annotations has no content of its
    /// own and is followed too, so `A → B → A` with nothing else is refused.
    pub fn follow(
        &mut self,
        doc: usize,
        reference: &str,
        at: &Ptr,
        schema: bool,
    ) -> Result<(usize, String), SpecError> {
        let memo_key = (doc, reference.to_string());
        if let Some(hit) = self.follow_memo.get(&memo_key) {
            return Ok(hit.clone());
        }
        let mut site_doc = doc;
        let mut site_ptr = at.to_string();
        let mut reference = reference.to_string();
        let mut seen: Vec<(usize, String)> = Vec::new();
        for _ in 0..MAX_CHAIN {
            let (d, p) = self.locate(site_doc, &reference).map_err(|message| {
                SpecError::reference(&self.docs[site_doc].name, &site_ptr, message)
            })?;
            if seen.contains(&(d, p.clone())) {
                let chain: Vec<String> = seen
                    .iter()
                    .map(|(d, p)| self.display_target(*d, p))
                    .collect();
                return Err(SpecError::reference(
                    &self.docs[doc].name,
                    at,
                    format!(
                        "reference chain has no content: {} → {}",
                        chain.join(" → "),
                        self.display_target(d, &p)
                    ),
                ));
            }
            let target = self.docs[d].root.pointer(&p);
            let Some(target) = target else {
                return Err(SpecError::reference(
                    &self.docs[site_doc].name,
                    &site_ptr,
                    format!("reference `{reference}` does not resolve"),
                ));
            };
            let next = match target.get("$ref").and_then(Value::as_str) {
                Some(r) if !schema || self.is_bare_ref(target) => Some(r.to_string()),
                _ => None,
            };
            seen.push((d, p.clone()));
            match next {
                Some(r) => {
                    site_doc = d;
                    site_ptr = format!("{p}/$ref");
                    reference = r;
                }
                None => {
                    self.follow_memo.insert(memo_key, (d, p.clone()));
                    return Ok((d, p));
                }
            }
        }
        Err(SpecError::reference(
            &self.docs[doc].name,
            at,
            format!("reference chain is longer than {MAX_CHAIN} steps"),
        ))
    }

    fn display_target(&self, d: usize, p: &str) -> String {
        if d == 0 {
            format!("#{p}")
        } else {
            format!("{}#{p}", self.docs[d].name)
        }
    }

    /// A schema `$ref` with nothing beside it but annotations (in 3.0 and Swagger every
    /// sibling of `$ref` is ignored, so there it is always bare).
    pub fn is_bare_ref(&self, schema: &Value) -> bool {
        let Some(map) = schema.as_object() else {
            return false;
        };
        if self.dialect != SpecVersion::OpenApi31 {
            return true;
        }
        map.keys().all(|k| {
            matches!(
                k.as_str(),
                "$ref" | "description" | "summary" | "title" | "$comment" | "example" | "examples"
            ) || k.starts_with("x-")
        })
    }

    /// The shared-schema entry for a schema reference, created (and queued for conversion)
    /// the first time; returns the rewritten `$ref`.
    pub fn schema_ref(
        &mut self,
        doc: usize,
        reference: &str,
        at: &Ptr,
    ) -> Result<Value, SpecError> {
        let (d, p) = self.follow(doc, reference, at, true)?;
        let idx = match self.memo.get(&(d, p.clone())) {
            Some(&i) => i,
            None => {
                let key = self.new_key(d, &p);
                let i = self.defs.len();
                self.defs.push(DefSlot {
                    key,
                    doc: d,
                    pointer: p.clone(),
                    value: None,
                    error: None,
                    edges: Vec::new(),
                });
                self.memo.insert((d, p), i);
                self.queue.push_back(i);
                i
            }
        };
        self.refs_out.push(idx);
        Ok(ref_value(&self.defs[idx].key))
    }

    /// A readable, unique key: `Pet` for `#/components/schemas/Pet` or `#/definitions/Pet`,
    /// the pointer's tokens joined by `.` otherwise, prefixed by the file's stem for another
    /// file. Only `[A-Za-z0-9._-]` are kept so the key needs no escaping in a URI fragment.
    fn new_key(&mut self, d: usize, pointer: &str) -> String {
        let tokens: Vec<String> = pointer
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        let short = match tokens.as_slice() {
            [c, s, name] if c == "components" && s == "schemas" => name.clone(),
            [defs, name] if defs == "definitions" || defs == "$defs" => name.clone(),
            _ => tokens.join("."),
        };
        let raw = if d == 0 {
            short
        } else {
            let name = &self.docs[d].name;
            let stem = Path::new(name)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if short.is_empty() {
                stem
            } else {
                format!("{stem}.{short}")
            }
        };
        let mut clean: String = raw
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            clean = "schema".into();
        }
        let mut key = clean.clone();
        // Next suffix to try per cleaned name, so that many names cleaning to one key do not
        // make the search quadratic.
        let mut n = self.suffixes.get(&clean).copied().unwrap_or(2);
        while self.used_keys.contains(&key) {
            key = format!("{clean}_{n}");
            n += 1;
        }
        self.suffixes.insert(clean, n);
        self.used_keys.insert(key.clone());
        key
    }

    /// Converts every queued entry. Errors stay with the entry; operations that reach it
    /// are skipped later.
    pub fn drain(&mut self) {
        let saved = std::mem::take(&mut self.refs_out);
        while let Some(i) = self.queue.pop_front() {
            let d = self.defs[i].doc;
            let pointer = self.defs[i].pointer.clone();
            let doc = self.doc(d);
            let result = match doc.root.pointer(&pointer) {
                Some(v) => self.convert_schema(d, v, &Ptr::Root(&pointer), 0),
                None => Err(SpecError::reference(
                    &doc.name,
                    &pointer,
                    "does not resolve".into(),
                )),
            };
            let edges = std::mem::take(&mut self.refs_out);
            let slot = &mut self.defs[i];
            slot.edges = edges;
            match result {
                Ok(v) => slot.value = Some(v),
                Err(e) => slot.error = Some(e.to_string()),
            }
        }
        self.refs_out = saved;
    }

    /// For each entry, why it is unusable: its own error or one it reaches.
    pub fn broken(&self) -> Vec<Option<String>> {
        let mut broken: Vec<Option<String>> = self.defs.iter().map(|s| s.error.clone()).collect();
        let mut reverse: Vec<Vec<usize>> = vec![Vec::new(); self.defs.len()];
        for (i, s) in self.defs.iter().enumerate() {
            for &e in &s.edges {
                reverse[e].push(i);
            }
        }
        let mut queue: VecDeque<usize> = (0..self.defs.len())
            .filter(|&i| broken[i].is_some())
            .collect();
        while let Some(i) = queue.pop_front() {
            let reason = broken[i].clone();
            for &r in &reverse[i] {
                if broken[r].is_none() {
                    broken[r] = reason.clone();
                    queue.push_back(r);
                }
            }
        }
        broken
    }

    /// The finished set: every entry that converted.
    pub fn schema_set(&mut self) -> SchemaSet {
        let mut set = SchemaSet::default();
        for slot in &mut self.defs {
            let value = slot.value.take().unwrap_or(Value::Bool(false));
            set.defs.insert(slot.key.clone(), value);
        }
        set
    }
}

/// `{"$ref": "#/$defs/<key>"}`.
pub(crate) fn ref_value(key: &str) -> Value {
    let mut map = serde_json::Map::new();
    map.insert(
        "$ref".into(),
        Value::String(format!(
            "{}{}",
            SchemaSet::REF_PREFIX,
            SchemaSet::escape_key(key)
        )),
    );
    Value::Object(map)
}
