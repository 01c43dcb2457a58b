//! Unsigned LEB128 varints, the integers of format-2 block content (and, later, of the
//! index's compressed columns).
//!
//! Seven bits per byte, least significant group first, the high bit set on every byte but
//! the last. Only the shortest form is accepted: each value has exactly one encoding, so
//! equal content is equal bytes and the golden vectors pin one answer.
//!
//! Depends on nothing.

/// Longest encoding of a `u64`.
pub const MAX_LEN: usize = 10;

/// Why bytes are not a varint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarintError {
    /// The bytes end before the last byte of the varint.
    Truncated,
    /// Longer than the shortest form, or more than 64 bits.
    Overlong,
}

/// Appends `value` to `out`.
pub fn write(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads the varint at `bytes[at..]`; gives its value and the offset after it.
pub fn read(bytes: &[u8], at: usize) -> Result<(u64, usize), VarintError> {
    let mut value = 0u64;
    for i in 0..MAX_LEN {
        let Some(&byte) = bytes.get(at + i) else {
            return Err(VarintError::Truncated);
        };
        let group = u64::from(byte & 0x7f);
        // The tenth byte holds bit 63 alone.
        if i == MAX_LEN - 1 && group > 1 {
            return Err(VarintError::Overlong);
        }
        value |= group << (7 * i);
        if byte & 0x80 == 0 {
            // A last byte of 0 after others adds nothing: a longer form of a shorter value.
            if i > 0 && byte == 0 {
                return Err(VarintError::Overlong);
            }
            return Ok((value, at + i + 1));
        }
    }
    Err(VarintError::Overlong)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        for (value, bytes) in [
            (0u64, &[0x00][..]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (16_384, &[0x80, 0x80, 0x01]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ] {
            let mut out = Vec::new();
            write(&mut out, value);
            assert_eq!(out, bytes, "{value}");
            assert_eq!(read(bytes, 0), Ok((value, bytes.len())), "{value}");
        }
    }

    #[test]
    fn bad_encodings_are_refused() {
        assert_eq!(read(&[], 0), Err(VarintError::Truncated));
        assert_eq!(read(&[0x80], 0), Err(VarintError::Truncated));
        assert_eq!(read(&[0x05], 1), Err(VarintError::Truncated));
        // 1 written in two bytes.
        assert_eq!(read(&[0x81, 0x00], 0), Err(VarintError::Overlong));
        // 2^64, one bit too many.
        let too_big = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02];
        assert_eq!(read(&too_big, 0), Err(VarintError::Overlong));
        // Eleven bytes.
        assert_eq!(read(&[0x80; 11], 0), Err(VarintError::Overlong));
    }

    proptest! {
        #[test]
        fn every_value_round_trips(value: u64, before in 0usize..4) {
            let mut out = vec![0xaa; before];
            write(&mut out, value);
            // 1 byte for 0..=127, one more per further 7 bits.
            let bits = 64 - (value | 1).leading_zeros() as usize;
            prop_assert_eq!(out.len() - before, bits.div_ceil(7));
            prop_assert_eq!(read(&out, before), Ok((value, out.len())));
        }

        #[test]
        fn reading_any_bytes_ends_without_panic(bytes: Vec<u8>, at in 0usize..12) {
            if let Ok((value, next)) = read(&bytes, at) {
                let mut again = Vec::new();
                write(&mut again, value);
                prop_assert_eq!(&bytes[at..next], &again[..]);
            }
        }
    }
}
