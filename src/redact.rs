//! Redaction: every value of a credential given to probe, in every form it takes on the
//! wire, replaced by [`SECRET_PLACEHOLDER`] in whatever probe keeps or prints.
//!
//! The wire builder already stores placeholders where it puts credentials itself
//! (`Authorization`, API-key headers, query parameters and cookies). This pass is the
//! second line, at the edge of the store: it also catches a credential where nobody put it
//! on purpose — a server that reflects `Authorization` in a reply header or body, a
//! transport-error message that quotes the URL sent (key included), a value that found its
//! way into a body. Every stored interaction goes through [`Redactor::interaction`] before
//! it is encoded, so the store, its trained dictionaries, the reports built from it and the
//! events of a run never hold a credential.
//!
//! Each secret is searched in the forms a reply or a message can carry it: as given,
//! percent-encoded (as in a URL), form-encoded, JSON-escaped, and base64 (standard, without
//! padding, URL-safe). A basic credential is searched as `user:password` and as the
//! password alone. Values shorter than [`MIN_SECRET_LEN`] bytes are replaced only where
//! probe puts them: searched everywhere, a two-letter key would eat every reply.
//!
//! A reply body in a content encoding (gzip, deflate, zstd: probe asks for none, and some
//! servers send one anyway) is decoded before it is searched; where it holds a secret it is
//! kept decoded and redacted, its `content-encoding` header renamed
//! `x-probe-decoded-content-encoding`, so that nothing kept decodes to the secret.
//!
//! A secret of [`LONG_FORM`] bytes or more (a login's token can be hundreds of kilobytes)
//! is searched with a substring finder of its own rather than through the automaton, whose
//! size grows with the patterns' total length times the alphabet: built over a 900 KB token
//! it took over a gigabyte. Either way the cost is linear in the secret's length.
//!
//! The names that read as credentials ([`credential_name`]) are one vocabulary: the fields
//! of a login body that are secret, and the query values of a URL given to probe (the
//! `--spec` URL's `?access_token=`) that are replaced before it is kept or printed
//! ([`redact_url`]).
//!
//! Depends on: `model` only; the wire (`send::wire`) takes its percent-encoding set,
//! [`COMPONENT`], from here, so the store can redact without depending on what sends.

use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::model::{
    BodyBytes, Interaction, Outcome, RequestRecord, ResponseRecord, SECRET_PLACEHOLDER,
};

/// Characters left as they are in a path segment or query component: RFC 3986 unreserved.
/// The wire (`send::wire`) encodes with this set, and the redactor searches for a
/// credential encoded with it, so the two can never disagree.
pub(crate) const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The shortest value searched for everywhere (see the module docs).
pub const MIN_SECRET_LEN: usize = 4;

/// The length from which a form of a secret is searched on its own (see the module docs).
pub const LONG_FORM: usize = 256;

/// Finds and replaces the secrets of one invocation. Cheap to clone (shared automaton).
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// `None` when there is nothing to search for: the common case costs a branch.
    finder: Option<Arc<AhoCorasick>>,
    /// The forms of [`LONG_FORM`] bytes or more, longest first, each with its own finder.
    long: Arc<Vec<memchr::memmem::Finder<'static>>>,
}

impl Redactor {
    /// A redactor for `secrets` (raw values as given to probe), each searched in every form
    /// listed in the module docs. Values shorter than [`MIN_SECRET_LEN`] are left out.
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Redactor {
        let mut patterns: Vec<String> = Vec::new();
        let mut long: Vec<String> = Vec::new();
        for secret in secrets.into_iter().filter(|s| s.len() >= MIN_SECRET_LEN) {
            for form in forms(secret) {
                let to = if form.len() >= LONG_FORM {
                    &mut long
                } else {
                    &mut patterns
                };
                if form.len() >= MIN_SECRET_LEN && !to.contains(&form) {
                    to.push(form);
                }
            }
        }
        // Longest first: `user:password` wins over `password`.
        long.sort_by_key(|form| std::cmp::Reverse(form.len()));
        let long: Vec<memchr::memmem::Finder<'static>> = long
            .iter()
            .map(|form| memchr::memmem::Finder::new(form.as_bytes()).into_owned())
            .collect();
        let finder = if patterns.is_empty() {
            None
        } else {
            // Longest first at one place, as above.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .ok()
                .map(Arc::new)
        };
        Redactor {
            finder,
            long: Arc::new(long),
        }
    }

    /// Whether there is anything to search for.
    pub fn is_empty(&self) -> bool {
        self.finder.is_none() && self.long.is_empty()
    }

    /// `text` with every secret replaced; `None` when it holds none. A placeholder already
    /// there is left whole, even when a secret is part of its text.
    pub fn text(&self, text: &str) -> Option<String> {
        self.bytes(text.as_bytes())
            .map(|clean| String::from_utf8_lossy(&clean).into_owned())
    }

    /// `bytes` with every secret replaced; `None` when they hold none. A placeholder
    /// already there is left whole, even when a secret is part of its text.
    pub fn bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        // The long forms first, each in one pass over the text (none of them can be part of
        // the placeholder, which is shorter); then the others, placeholders left whole.
        let mut replaced: Option<Vec<u8>> = None;
        for finder in self.long.iter() {
            let text = replaced.as_deref().unwrap_or(bytes);
            let len = finder.needle().len();
            if text.len() < len || finder.find(text).is_none() {
                continue;
            }
            let mut out = Vec::with_capacity(text.len());
            let mut at = 0;
            for start in finder.find_iter(text) {
                out.extend_from_slice(&text[at..start]);
                out.extend_from_slice(SECRET_PLACEHOLDER.as_bytes());
                at = start + len;
            }
            out.extend_from_slice(&text[at..]);
            replaced = Some(out);
        }
        match replaced {
            None => self.short_forms(bytes),
            Some(text) => Some(self.short_forms(&text).unwrap_or(text)),
        }
    }

    /// [`Redactor::bytes`] for the forms shorter than [`LONG_FORM`].
    fn short_forms(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        let finder = self.finder.as_ref()?;
        let placeholder = SECRET_PLACEHOLDER.as_bytes();
        let mut out: Option<Vec<u8>> = None;
        let mut rest = bytes;
        let mut done = 0usize;
        loop {
            // The text up to the next placeholder (or the end) is searched on its own.
            let next = memchr::memmem::find(rest, placeholder);
            let piece = &rest[..next.unwrap_or(rest.len())];
            if finder.is_match(piece) {
                let out = out.get_or_insert_with(|| bytes[..done].to_vec());
                finder.replace_all_with_bytes(piece, out, |_, _, dst| {
                    dst.extend_from_slice(placeholder);
                    true
                });
            } else if let Some(out) = out.as_mut() {
                out.extend_from_slice(piece);
            }
            done += piece.len();
            match next {
                Some(_) => {
                    if let Some(out) = out.as_mut() {
                        out.extend_from_slice(placeholder);
                    }
                    done += placeholder.len();
                    rest = &rest[piece.len() + placeholder.len()..];
                }
                None => return out,
            }
        }
    }

    /// Replaces secrets in `text` in place; whether any was found.
    pub fn string_in_place(&self, text: &mut String) -> bool {
        match self.text(text) {
            Some(clean) => {
                *text = clean;
                true
            }
            None => false,
        }
    }

    fn body_in_place(&self, body: &mut Option<BodyBytes>) -> bool {
        if let Some(BodyBytes::Inline(bytes)) = body {
            if let Some(clean) = self.bytes(bytes) {
                *bytes = clean;
                return true;
            }
        }
        false
    }

    /// A body in a content encoding, decoded and searched; where it holds a secret it is
    /// kept decoded and redacted (see the module docs). Whether a secret was found.
    fn encoded_body_in_place(&self, response: &mut ResponseRecord) -> bool {
        let Some(encoding) = response.header("content-encoding") else {
            return false;
        };
        let Some(BodyBytes::Inline(bytes)) = &response.body else {
            return false;
        };
        let Some(decoded) = decode_content(encoding, bytes) else {
            return false;
        };
        let Some(clean) = self.bytes(&decoded) else {
            return false;
        };
        response.body = Some(BodyBytes::Inline(clean));
        for (name, _) in &mut response.headers {
            if name.eq_ignore_ascii_case("content-encoding") {
                *name = DECODED_ENCODING_HEADER.to_owned();
            }
        }
        true
    }

    fn headers_in_place(&self, headers: &mut [(String, String)]) -> bool {
        let mut found = false;
        for (_, value) in headers {
            found |= self.string_in_place(value);
        }
        found
    }

    /// Redacts the request as stored: URL, headers, body. Whether a secret was found.
    pub fn request(&self, request: &mut RequestRecord) -> bool {
        if self.is_empty() {
            return false;
        }
        let url = self.string_in_place(&mut request.url);
        let headers = self.headers_in_place(&mut request.headers);
        let body = self.body_in_place(&mut request.body);
        url | headers | body
    }

    /// Redacts what came back: reply headers and body, or the transport-error message.
    /// Whether a secret was found (a reflection, or a message quoting what was sent).
    pub fn outcome(&self, outcome: &mut Outcome) -> bool {
        if self.is_empty() {
            return false;
        }
        match outcome {
            Outcome::Response(r) => {
                let headers = self.headers_in_place(&mut r.headers);
                // Decoded first: a compressed body can hold a secret's bytes as they are
                // (zstd keeps short literals raw), and replacing them there would leave a
                // body that no longer decodes, and the rest of the secret in it.
                let decoded = self.encoded_body_in_place(r);
                let body = self.body_in_place(&mut r.body);
                headers | body | decoded
            }
            Outcome::TransportError { message, .. } => self.string_in_place(message),
        }
    }

    /// Redacts a whole interaction (bodies still inline). Whether a secret was found.
    pub fn interaction(&self, interaction: &mut Interaction) -> bool {
        let request = self.request(&mut interaction.request);
        let outcome = self.outcome(&mut interaction.outcome);
        let first = interaction
            .retried
            .as_mut()
            .is_some_and(|first| self.string_in_place(&mut first.message));
        request | outcome | first
    }
}

/// Whether a field or parameter of that name holds a credential (`password`,
/// `client_secret`, `apiKey`, `access_token`): the one vocabulary of names probe treats as
/// secret.
pub fn credential_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["pass", "secret", "token", "key", "credential", "pin"]
        .iter()
        .any(|w| lower.contains(w))
}

/// Whether a URL's query parameter of that name holds a credential: [`credential_name`],
/// and the names signed and session URLs carry one under (`X-Amz-Signature`, `sig`,
/// `auth`, `session_id`, `jwt`).
fn credential_query_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    credential_name(name)
        || ["sig", "auth", "session", "jwt"]
            .iter()
            .any(|w| lower.contains(w))
}

/// A URL given to probe, as it may be kept or printed, and the secrets it held.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedactedUrl {
    /// The URL with its userinfo's password (or a userinfo that is a name alone: a token)
    /// and every query value whose name reads as a credential replaced by the
    /// placeholder, percent-encoded; anything that is not an http(s) URL as given.
    pub text: String,
    /// The values replaced, decoded, and `user:password`: for a [`Redactor`], which also
    /// searches them out of what the URL's server sent and of messages that quote them.
    pub secrets: Vec<String>,
}

/// `url` with its credentials replaced (see [`RedactedUrl`]). Applied twice, it changes
/// nothing more: the placeholder is not a credential.
pub fn redact_url(url: &str) -> RedactedUrl {
    let unchanged = || RedactedUrl {
        text: url.to_owned(),
        secrets: Vec::new(),
    };
    let Ok(mut parsed) = url::Url::parse(url) else {
        return unchanged();
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return unchanged();
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let placeholder = utf8_percent_encode(SECRET_PLACEHOLDER, COMPONENT).to_string();
    let mut secrets = Vec::new();
    let mut changed = false;
    let user = decode(parsed.username());
    match parsed.password().map(decode) {
        Some(password) if password != SECRET_PLACEHOLDER => {
            secrets.push(format!("{user}:{password}"));
            secrets.push(password);
            changed |= parsed.set_password(Some(SECRET_PLACEHOLDER)).is_ok();
        }
        // A name alone is most often a token (`https://TOKEN@host/...`).
        None if !user.is_empty() && user != SECRET_PLACEHOLDER => {
            secrets.push(user);
            changed |= parsed.set_username(SECRET_PLACEHOLDER).is_ok();
        }
        _ => {}
    }
    if let Some(query) = parsed.query() {
        let mut pieces: Vec<String> = Vec::new();
        let mut query_changed = false;
        for piece in query.split('&') {
            let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
            let name_text: String = url::form_urlencoded::parse(name.as_bytes())
                .map(|(k, _)| k.into_owned())
                .next()
                .unwrap_or_default();
            let value_text: String = url::form_urlencoded::parse(format!("x={value}").as_bytes())
                .map(|(_, v)| v.into_owned())
                .next()
                .unwrap_or_default();
            if credential_query_name(&name_text)
                && !value_text.is_empty()
                && value_text != SECRET_PLACEHOLDER
            {
                secrets.push(value_text);
                pieces.push(format!("{name}={placeholder}"));
                query_changed = true;
            } else {
                pieces.push(piece.to_owned());
            }
        }
        if query_changed {
            parsed.set_query(Some(&pieces.join("&")));
            changed = true;
        }
    }
    if !changed {
        return unchanged();
    }
    RedactedUrl {
        text: parsed.to_string(),
        secrets,
    }
}

/// The header a redacted reply's `content-encoding` is renamed to: its body is kept decoded.
pub const DECODED_ENCODING_HEADER: &str = "x-probe-decoded-content-encoding";

/// The most a body is decoded to: a reply compressed a thousandfold is not searched past it.
const MAX_DECODED: u64 = 64 * 1024 * 1024;

/// `bytes` decoded from `encoding` (a `content-encoding` value, codings in the order they
/// were applied); `None` for a coding probe does not decode, a body that does not decode,
/// or one that decodes past [`MAX_DECODED`].
fn decode_content(encoding: &str, bytes: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut body = bytes.to_vec();
    let codings: Vec<String> = encoding
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    if codings.is_empty() {
        return None;
    }
    for coding in codings.iter().rev() {
        let mut out = Vec::new();
        let read = match coding.as_str() {
            "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(&body[..])
                .take(MAX_DECODED + 1)
                .read_to_end(&mut out),
            // `deflate` is zlib-wrapped by the standard, raw deflate by some servers.
            "deflate" => flate2::read::ZlibDecoder::new(&body[..])
                .take(MAX_DECODED + 1)
                .read_to_end(&mut out)
                .or_else(|_| {
                    out.clear();
                    flate2::read::DeflateDecoder::new(&body[..])
                        .take(MAX_DECODED + 1)
                        .read_to_end(&mut out)
                }),
            "zstd" => zstd::stream::read::Decoder::new(&body[..])
                .and_then(|d| d.take(MAX_DECODED + 1).read_to_end(&mut out)),
            _ => return None,
        };
        if read.is_err() || out.len() as u64 > MAX_DECODED {
            return None;
        }
        body = out;
    }
    Some(body)
}

/// The forms one secret can take in a reply or a message.
fn forms(secret: &str) -> Vec<String> {
    let mut out = vec![secret.to_owned()];
    let percent = utf8_percent_encode(secret, COMPONENT).to_string();
    out.push(lowercase_escapes(&percent));
    out.push(percent);
    out.push(url::form_urlencoded::byte_serialize(secret.as_bytes()).collect());
    if let Ok(json) = serde_json::to_string(secret) {
        out.push(json[1..json.len() - 1].to_owned());
    }
    for engine in [
        &base64::engine::general_purpose::STANDARD,
        &base64::engine::general_purpose::STANDARD_NO_PAD,
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    ] {
        out.push(engine.encode(secret));
    }
    out
}

/// Percent escapes written with lower-case hex digits (`%2f`), as some servers echo them.
fn lowercase_escapes(percent_encoded: &str) -> String {
    let mut out = String::with_capacity(percent_encoded.len());
    let mut escape = 0;
    for c in percent_encoded.chars() {
        if c == '%' {
            escape = 2;
            out.push(c);
        } else if escape > 0 {
            escape -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TransportErrorKind;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn encoded_reply(encoding: &str, body: Vec<u8>) -> Outcome {
        Outcome::Response(ResponseRecord {
            status: 200,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("content-encoding".into(), encoding.into()),
            ],
            body: Some(BodyBytes::Inline(body)),
            truncated: false,
        })
    }

    fn reply_parts(outcome: &Outcome) -> (Vec<(String, String)>, Vec<u8>) {
        match outcome {
            Outcome::Response(ResponseRecord {
                headers,
                body: Some(BodyBytes::Inline(b)),
                ..
            }) => (headers.clone(), b.clone()),
            other => panic!("{other:?}"),
        }
    }

    /// A token echoed inside a gzip body nobody asked for was kept compressed, and
    /// recoverable by anyone who gunzipped the export.
    #[test]
    fn a_secret_in_an_encoded_body_is_found_and_the_body_kept_decoded() {
        let r = Redactor::new(["t0ken-s3cret"]);
        let text = br#"{"echo":"Bearer t0ken-s3cret"}"#;
        let zstd_body = zstd::encode_all(&text[..], 3).unwrap();
        for (encoding, body) in [
            ("gzip", gzip(text)),
            ("x-gzip", gzip(text)),
            ("zstd", zstd_body),
            ("gzip, gzip", gzip(&gzip(text))),
        ] {
            let mut outcome = encoded_reply(encoding, body);
            assert!(r.outcome(&mut outcome), "{encoding}");
            let (headers, body) = reply_parts(&outcome);
            assert_eq!(
                String::from_utf8_lossy(&body),
                format!(r#"{{"echo":"Bearer {SECRET_PLACEHOLDER}"}}"#),
                "{encoding}"
            );
            assert!(headers.contains(&(DECODED_ENCODING_HEADER.into(), encoding.into())));
            assert!(!headers.iter().any(|(k, _)| k == "content-encoding"));
        }
    }

    #[test]
    fn an_encoded_body_without_a_secret_is_kept_as_it_came() {
        let r = Redactor::new(["t0ken-s3cret"]);
        let body = gzip(br#"{"echo":"nothing"}"#);
        let mut outcome = encoded_reply("gzip", body.clone());
        assert!(!r.outcome(&mut outcome));
        assert_eq!(reply_parts(&outcome).1, body);
        // A coding probe cannot decode, or a body that is not what it says, is left alone.
        for (encoding, body) in [
            ("br", b"brotli bytes".to_vec()),
            ("gzip", b"not gzip".to_vec()),
        ] {
            let mut outcome = encoded_reply(encoding, body.clone());
            assert!(!r.outcome(&mut outcome), "{encoding}");
            assert_eq!(reply_parts(&outcome).1, body);
        }
    }

    #[test]
    fn every_form_of_a_secret_is_replaced() {
        let r = Redactor::new(["s3cr3t/key+1"]);
        let b64 = base64::engine::general_purpose::STANDARD.encode("s3cr3t/key+1");
        for text in [
            "token s3cr3t/key+1 echoed".to_owned(),
            "GET /x?k=s3cr3t%2Fkey%2B1 failed".to_owned(),
            "GET /x?k=s3cr3t%2fkey%2b1 failed".to_owned(),
            "form k=s3cr3t%2Fkey%2B1".to_owned(),
            format!("basic {b64}"),
            format!("basic {}", b64.trim_end_matches('=')),
        ] {
            let clean = r.text(&text).unwrap_or_else(|| panic!("{text}"));
            assert!(clean.contains(SECRET_PLACEHOLDER), "{clean}");
            assert!(!clean.contains("s3cr3t"), "{clean}");
            assert!(!clean.contains(&b64[..8]), "{clean}");
        }
        assert_eq!(r.text("nothing to see"), None);
    }

    #[test]
    fn the_longest_form_wins_and_short_values_are_not_searched() {
        let r = Redactor::new(["bob:hunter22", "hunter22", "ab"]);
        assert_eq!(
            r.text("u=bob:hunter22 p=hunter22 ab").as_deref(),
            Some("u=<probe:secret> p=<probe:secret> ab")
        );
        assert!(Redactor::new(["ab", ""]).is_empty());
        // A secret that is part of the placeholder leaves a placeholder already there whole.
        let r = Redactor::new(["secret"]);
        assert_eq!(
            r.text("a <probe:secret> b secret c").as_deref(),
            Some("a <probe:secret> b <probe:secret> c")
        );
        assert_eq!(r.text("<probe:secret>"), None);
        assert!(Redactor::default().text("anything").is_none());
    }

    #[test]
    fn replies_and_transport_messages_are_redacted() {
        let r = Redactor::new(["Zm9vYmFyYmF6"]);
        let mut reply = Outcome::Response(ResponseRecord {
            status: 200,
            headers: vec![("x-echo".into(), "Bearer Zm9vYmFyYmF6".into())],
            body: Some(BodyBytes::Inline(
                br#"{"auth":"Bearer Zm9vYmFyYmF6"}"#.to_vec(),
            )),
            truncated: false,
        });
        assert!(r.outcome(&mut reply));
        let Outcome::Response(reply) = reply else {
            unreachable!()
        };
        assert_eq!(reply.headers[0].1, "Bearer <probe:secret>");
        assert_eq!(
            reply.body,
            Some(BodyBytes::Inline(
                br#"{"auth":"Bearer <probe:secret>"}"#.to_vec()
            ))
        );
        let mut error = Outcome::TransportError {
            kind: TransportErrorKind::Reset,
            message: "error sending request for url (http://127.0.0.1:1/x?key=Zm9vYmFyYmF6)".into(),
        };
        assert!(r.outcome(&mut error));
        assert!(!format!("{error:?}").contains("Zm9vYmFyYmF6"));
    }

    /// A token hundreds of kilobytes long is searched for in every form, beside short
    /// secrets, the longest form winning; the automaton built over such a token took over a
    /// gigabyte.
    #[test]
    fn a_long_secret_is_found_in_every_form() {
        let token: String = (0..300_000)
            .map(|i| char::from(b"abcdefghij+/0123456789"[i * 7 % 22]))
            .collect();
        let r = Redactor::new([token.as_str(), "sh0rt-s3cret"]);
        assert!(
            r.long.len() >= 3,
            "the long forms are searched on their own"
        );
        for form in forms(&token) {
            let text = format!("a {form} b sh0rt-s3cret c {form}");
            let clean = r.text(&text).unwrap_or_else(|| panic!("{}", &form[..20]));
            assert_eq!(
                clean,
                format!("a {SECRET_PLACEHOLDER} b {SECRET_PLACEHOLDER} c {SECRET_PLACEHOLDER}")
            );
        }
        assert_eq!(r.text("nothing here"), None);
        // `user:password` wins over `password` when both are long.
        let password = &token[..1000];
        let r = Redactor::new([format!("bob:{password}").as_str(), password]);
        assert_eq!(
            r.text(&format!("x bob:{password} y")).as_deref(),
            Some("x <probe:secret> y")
        );
    }

    #[test]
    fn a_urls_credentials_are_replaced_and_returned() {
        let url = redact_url(
            "http://reader:pa%2Fss@127.0.0.1:8080/openapi.json?lang=en&access_token=t0k+en&X-Amz-Signature=abc",
        );
        assert_eq!(
            url.text,
            "http://reader:%3Cprobe%3Asecret%3E@127.0.0.1:8080/openapi.json\
             ?lang=en&access_token=%3Cprobe%3Asecret%3E&X-Amz-Signature=%3Cprobe%3Asecret%3E"
        );
        assert_eq!(url.secrets, ["reader:pa/ss", "pa/ss", "t0k en", "abc"]);
        // Applied again, nothing changes; a URL without credentials, or a file, is as given.
        assert_eq!(redact_url(&url.text).text, url.text);
        assert!(redact_url(&url.text).secrets.is_empty());
        for given in [
            "http://127.0.0.1:8080/openapi.json?lang=en",
            "specs/openapi.yaml",
            "/tmp/a b?token=x.yaml",
        ] {
            assert_eq!(redact_url(given).text, given);
        }
        // A name alone is a token.
        let url = redact_url("https://ghp_abcdef@example.com/api.yaml");
        assert_eq!(
            url.text,
            "https://%3Cprobe%3Asecret%3E@example.com/api.yaml"
        );
        assert_eq!(url.secrets, ["ghp_abcdef"]);
    }

    proptest::proptest! {
        /// Whatever the secret and wherever it sits, no form of it survives redaction.
        #[test]
        fn no_form_survives(
            // Upper case, digits and signs: no part of the (lower-case) placeholder.
            secret in "[A-Z0-9 +/=%&?#]{4,24}",
            before in "[ -~]{0,16}",
            after in "[ -~]{0,16}",
        ) {
            let r = Redactor::new([secret.as_str()]);
            for form in forms(&secret) {
                let text = format!("{before}{form}{after}");
                let clean = r.text(&text).unwrap_or(text.clone());
                proptest::prop_assert!(!clean.contains(&secret), "{clean}");
                proptest::prop_assert!(!clean.contains(&form), "{clean}");
            }
        }
    }
}
