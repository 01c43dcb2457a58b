//! Values for JSON Schema and OpenAPI `format` names.
//!
//! Each generator builds a string that the validator's format check accepts (the tests hold
//! this for every name here). Formats that only annotate (`binary`, `password`) and unknown
//! names return `None`, and the caller builds a plain string within the length bounds.
//! Integer and number formats (`int32`, `int64`, `float`, `double`) are bounds, applied by the
//! numeric generator through [`integer_bounds`].
//!
//! Depends on nothing else in probe.

use base64::Engine as _;
use rand::Rng;

/// String formats the generator knows how to build.
pub const STRING_FORMATS: &[&str] = &[
    "date",
    "date-time",
    "time",
    "email",
    "uuid",
    "uri",
    "uri-reference",
    "hostname",
    "ipv4",
    "ipv6",
    "byte",
    "duration",
    "json-pointer",
    "relative-json-pointer",
    "iri",
    "iri-reference",
    "uri-template",
    "regex",
];

/// A string of `format`, or `None` when the name is not one the generator builds.
/// `min_len`/`max_len` are honoured where the format has freedom in its length (`byte`).
pub fn generate<R: Rng + ?Sized>(
    format: &str,
    rng: &mut R,
    min_len: usize,
    max_len: usize,
) -> Option<String> {
    Some(match format {
        "date" => date(rng),
        "date-time" => format!("{}T{}", date(rng), time(rng)),
        "time" => time(rng),
        // The free part (local part, path, first label) stretches to meet the length bounds.
        "email" => {
            let (lo, hi) = stretch(min_len, max_len, "@example.com".len(), 3, 10, 64);
            format!("{}@example.com", word(rng, lo, hi))
        }
        "uuid" => uuid(rng),
        "uri" => {
            let (lo, hi) = stretch(min_len, max_len, "https://example.com/".len(), 1, 12, 2000);
            format!("https://example.com/{}", word(rng, lo, hi))
        }
        "uri-reference" => {
            let (lo, hi) = stretch(min_len, max_len, "/items/".len(), 1, 12, 2000);
            format!("/items/{}", word(rng, lo, hi))
        }
        "hostname" => {
            let (lo, hi) = stretch(min_len, max_len, ".example.com".len(), 1, 12, 63);
            format!("{}.example.com", word(rng, lo, hi))
        }
        "ipv4" => format!(
            "{}.{}.{}.{}",
            rng.gen_range(1..=223u8),
            rng.gen::<u8>(),
            rng.gen::<u8>(),
            rng.gen_range(1..=254u8)
        ),
        "ipv6" => {
            let groups: Vec<String> = (0..8).map(|_| format!("{:x}", rng.gen::<u16>())).collect();
            groups.join(":")
        }
        "byte" => byte(rng, min_len, max_len),
        "duration" => format!(
            "P{}DT{}H{}M",
            rng.gen_range(0..30),
            rng.gen_range(0..24),
            rng.gen_range(0..60)
        ),
        "json-pointer" => format!("/{}/{}", word(rng, 1, 8), rng.gen_range(0..10)),
        "relative-json-pointer" => format!("{}/{}", rng.gen_range(0..3), word(rng, 1, 8)),
        "iri" => format!("https://example.com/{}é", word(rng, 1, 10)),
        "iri-reference" => format!("/{}é", word(rng, 1, 10)),
        "uri-template" => format!("https://example.com/{}/{{id}}", word(rng, 1, 10)),
        "regex" => format!("^{}[0-9]*$", word(rng, 1, 6)),
        _ => return None,
    })
}

/// The bounds an integer format imposes.
pub fn integer_bounds(format: &str) -> Option<(i128, i128)> {
    match format {
        "int32" => Some((i32::MIN as i128, i32::MAX as i128)),
        "int64" => Some((i64::MIN as i128, i64::MAX as i128)),
        "uint32" => Some((0, u32::MAX as i128)),
        "uint64" => Some((0, u64::MAX as i128)),
        "int8" => Some((i8::MIN as i128, i8::MAX as i128)),
        "int16" => Some((i16::MIN as i128, i16::MAX as i128)),
        "uint8" => Some((0, u8::MAX as i128)),
        "uint16" => Some((0, u16::MAX as i128)),
        _ => None,
    }
}

/// Length range for the free part of a value with `fixed` other characters: the usual
/// `lo..=hi`, moved to meet `min_len..=max_len` where it can, never beyond `limit`.
fn stretch(
    min_len: usize,
    max_len: usize,
    fixed: usize,
    lo: usize,
    hi: usize,
    limit: usize,
) -> (usize, usize) {
    let need = min_len.saturating_sub(fixed).clamp(1, limit);
    let room = max_len.saturating_sub(fixed).clamp(1, limit);
    let lo = lo.max(need).min(room);
    let hi = hi.max(lo).min(room).max(lo);
    (lo, hi)
}

fn date<R: Rng + ?Sized>(rng: &mut R) -> String {
    let year = rng.gen_range(1970..=2037);
    let month = rng.gen_range(1..=12);
    // Every day of the month, the 29th to 31st included: an API that mishandles the end of
    // a month refuses valid dates only those days show.
    let day = rng.gen_range(1..=days_in_month(year, month));
    format!("{year:04}-{month:02}-{day:02}")
}

/// Days of `month` (1 to 12) in the Gregorian `year`.
fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        _ => 31,
    }
}

fn time<R: Rng + ?Sized>(rng: &mut R) -> String {
    format!(
        "{:02}:{:02}:{:02}Z",
        rng.gen_range(0..24),
        rng.gen_range(0..60),
        rng.gen_range(0..60)
    )
}

fn uuid<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut b: [u8; 16] = rng.gen();
    // Version 4, variant 1: what most servers expect of a random UUID.
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn word<R: Rng + ?Sized>(rng: &mut R, min: usize, max: usize) -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
    let n = rng.gen_range(min..=max);
    (0..n)
        .map(|_| CHARS[rng.gen_range(0..CHARS.len())] as char)
        .collect()
}

/// Base64 of random bytes, with as many bytes as fit the length bounds (4 characters per 3).
fn byte<R: Rng + ?Sized>(rng: &mut R, min_len: usize, max_len: usize) -> String {
    let lo = min_len.div_ceil(4);
    let hi = (max_len / 4).max(lo);
    let quads = if lo == hi {
        lo
    } else {
        rng.gen_range(lo..=hi.min(lo + 8))
    };
    let bytes: Vec<u8> = (0..quads * 3).map(|_| rng.gen()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn months_have_their_calendar_length() {
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(days_in_month(2025, 2), 28);
        assert_eq!(days_in_month(2025, 4), 30);
        assert_eq!(days_in_month(2025, 12), 31);
    }

    #[test]
    fn dates_reach_the_end_of_months() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let late = (0..2000)
            .map(|_| date(&mut rng))
            .filter(|d| d[8..].parse::<u32>().is_ok_and(|day| day > 28))
            .count();
        assert!(late > 50, "{late} of 2000 dates fell after the 28th");
    }
}
