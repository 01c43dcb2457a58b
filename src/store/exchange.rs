//! One sent exchange encoded for the store: the test case, the request as stored, what
//! came back, and the blobs of its large bodies, with their ids known before anything is
//! written.
//!
//! This is the encoding side of what [`Store::get_interaction`](super::Store::get_interaction),
//! [`Store::get_case`](super::Store::get_case) and [`Store::body_bytes`](super::Store::body_bytes)
//! decode. The run and `probe replay` both encode here, so that a replayed interaction is
//! stored exactly as a run stores one.
//!
//! It is also the edge of the store: the [`Redactor`] replaces every credential in the
//! request and in what came back (a reflection, a message quoting the URL sent) before
//! anything is encoded, learned or judged.
//!
//! Depends on: `ids`, `model`, `redact`.

use crate::ids::{CaseId, InteractionId, RunId};
use crate::model::{BodyBytes, Interaction, RequestRecord, Sent, TestCase, Timing};
use crate::redact::Redactor;

use super::error::StoreError;
use super::object::{encode, externalize_bodies, kept_as_blob, EncodedObject};

/// One sent exchange encoded for the store.
pub struct EncodedExchange {
    /// The interaction as stored (large bodies moved out to blobs).
    pub interaction: Interaction,
    pub id: InteractionId,
    pub case_id: CaseId,
    /// The test case, the blobs and the interaction, ready for the recorder.
    pub objects: Vec<EncodedObject>,
    /// The reply's body when the store keeps it as a blob of its own (it has left
    /// `interaction`): a copy for judging. A small body is read in place.
    pub large_body: Option<Vec<u8>>,
}

impl EncodedExchange {
    /// The reply's body as recorded (redacted), wherever it now is.
    pub fn response_body(&self) -> Option<&[u8]> {
        self.large_body.as_deref().or_else(|| {
            match self
                .interaction
                .outcome
                .response()
                .and_then(|r| r.body.as_ref())
            {
                Some(BodyBytes::Inline(b)) => Some(b.as_slice()),
                _ => None,
            }
        })
    }
}

/// Encodes one sent exchange: `request` is the request as stored (credentials as
/// placeholders; a `send::WireRequest` converts into it), `sent` what came back (and the
/// first attempt's failure when the request was sent again on a fresh connection).
pub fn encode_exchange(
    run: RunId,
    seq: u64,
    case: &TestCase,
    request: impl Into<RequestRecord>,
    sent: Sent,
    timing: Timing,
    redactor: &Redactor,
) -> Result<EncodedExchange, StoreError> {
    let Sent { outcome, retried } = sent;
    let case_obj = encode(case)?;
    let case_id = CaseId(case_obj.id);
    let mut interaction = Interaction {
        run,
        seq,
        case: case_id,
        request: request.into(),
        outcome,
        timing,
        retried,
    };
    redactor.interaction(&mut interaction);
    let large_body = match interaction.outcome.response().and_then(|r| r.body.as_ref()) {
        Some(BodyBytes::Inline(b)) if kept_as_blob(b.len()) => Some(b.clone()),
        _ => None,
    };
    let mut objects = externalize_bodies(&mut interaction);
    let encoded = encode(&interaction)?;
    let id = InteractionId(encoded.id);
    objects.push(case_obj);
    objects.push(encoded);
    Ok(EncodedExchange {
        interaction,
        id,
        case_id,
        objects,
        large_body,
    })
}
