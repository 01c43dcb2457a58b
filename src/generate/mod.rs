//! Generation: what to send next and how a test case is built, from the plan, the schemas
//! and the API's own answers. Pure: it sends nothing, keeps nothing, publishes nothing, and
//! knows neither the budget nor the clock; the engine drives it, batch by batch, and hands
//! it the answers to learn from in generation order (docs/determinism.md).
//!
//! - [`strategy`]: which test case comes next for an operation (the plan's strategy drawn,
//!   then its work: nominal, mutation, fuzzing) and the operation's random streams;
//! - [`cases`]: one operation, one generation mode, one random stream → one positive
//!   [`TestCase`](crate::model::TestCase), its values' sources recorded;
//! - [`memory`]: the memory of answers, identifiers the API handed out offered back to the
//!   parameters that name them, and the values an OpenAPI link names;
//! - [`vocabulary`]: the names the document's parameters take, which the memory learns;
//! - [`stream`]: the ChaCha stream of one (seed, operation, purpose).
//!
//! Depends on: `model`, `ids`, `spec`, `schema`, `plan` (the plan, dictionaries), `mutate`
//! (changes, awkward values, the accepted requests kept); never `engine`, `send`, `store`
//! or `events`.

pub mod cases;
pub mod memory;
pub mod strategy;
pub mod vocabulary;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A ChaCha stream for one (seed, operation, purpose): independent of every other
/// operation, so adding an operation or a worker never shifts another's values.
pub fn stream(seed: u64, operation: &str, purpose: &str) -> ChaCha8Rng {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"probe-stream-v1\0");
    hasher.update(&seed.to_le_bytes());
    hasher.update(operation.as_bytes());
    hasher.update(b"\0");
    hasher.update(purpose.as_bytes());
    ChaCha8Rng::from_seed(*hasher.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn streams_are_independent_and_repeatable() {
        let mut a = stream(1, "listPets", "nominal");
        let mut b = stream(1, "listPets", "nominal");
        let mut c = stream(1, "createPet", "nominal");
        let x = a.next_u64();
        assert_eq!(x, b.next_u64());
        assert_ne!(x, c.next_u64());
    }
}
