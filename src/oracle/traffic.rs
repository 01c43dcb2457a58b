//! The sequence oracles over ordinary traffic: the run's own requests often form the very
//! sequences the series send on purpose, and that evidence is judged too
//! (`deleted_still_available`, `created_not_retrievable`; issue 48 item 5).
//!
//! - A DELETE of a path answered 2xx (not 202, which promises the deletion later), then a
//!   GET of the same path, sent as the same identity after the DELETE was answered,
//!   answered 2xx, with no creation that could have made that path again (a PUT of it, a
//!   POST to its collection naming that id or naming none) sent while the two ran.
//! - A POST answered 201 naming the id it made (its `Location`, or the id field of its
//!   body), and every read of that item, sent as the same identity after the creation was
//!   answered and before any DELETE of it, answered 404 or 410 (at least one read).
//!
//! Each exchange that could be part of such a sequence is noted as a [`Visit`] while it is
//! judged; the sequences are judged once, when every exchange has been judged
//! ([`super::Oracles::finish`]), over the visits in the run's sequence order, with the
//! times the store keeps. So `probe run` and `probe recheck` give the same findings,
//! whatever the order the workers judged in: nothing here depends on when it was judged.
//! "Sent after it was answered" uses the stored start and duration, widened by the
//! millisecond the start is rounded to, so concurrent workers never make a false order.
//!
//! Depends on: `model`, `ids`, `spec`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::{per_operation, Exchange, Late, OracleInfo};
use crate::ids::InteractionId;
use crate::model::{Outcome, TestCase};
use crate::spec::Api;

/// Keys of an answer's body that wrap the created object (`{"data": {"id": …}}`).
const WRAPPERS: &[&str] = &["data", "item", "result", "resource", "object", "record"];

/// One exchange as the traffic oracles see it: what was sent where, as whom, when, and
/// what came back.
#[derive(Debug, Clone)]
pub struct Visit {
    pub seq: u64,
    pub interaction: InteractionId,
    /// Upper-case method as sent.
    pub method: String,
    /// The operation's path template.
    pub template: String,
    /// The path as sent (no query), without a trailing `/`.
    pub path: String,
    pub status: u16,
    pub identity: Option<String>,
    /// A changed request (a mutation): not a plain read.
    pub mutated: bool,
    /// Microseconds since the epoch: the earliest the request may have left, and the
    /// latest its answer may have come.
    pub start_us: u64,
    pub end_us: u64,
    /// For an accepted POST: the ids its answer named (`None`: it named none, so it may
    /// have made any).
    pub created: Option<BTreeSet<String>>,
    /// The case, kept only for the steps a finding is about (DELETE, POST).
    pub case: Option<Arc<TestCase>>,
}

/// The visit an exchange makes, when it could be part of a sequence on one resource: a
/// GET or PUT of an item path, any DELETE, an accepted POST.
pub fn visit(exchange: &Exchange<'_>) -> Option<Visit> {
    let Outcome::Response(response) = &exchange.interaction.outcome else {
        return None;
    };
    let case = exchange.case;
    let method = case.method.to_ascii_uppercase();
    let status = response.status;
    let ok = (200..300).contains(&status);
    let item = case.path.trim_end_matches('/').ends_with('}');
    let keep = match method.as_str() {
        "GET" | "PUT" => item,
        "DELETE" => true,
        "POST" => ok,
        _ => false,
    };
    if !keep {
        return None;
    }
    let timing = &exchange.interaction.timing;
    let start_us = timing.started_ms.saturating_mul(1000);
    // The start is rounded down to the millisecond: the answer may have come up to one
    // millisecond later than start + elapsed says.
    let end_us = start_us
        .saturating_add(1000)
        .saturating_add(timing.elapsed_us);
    let created = (method == "POST").then(|| {
        let location = response.header("location");
        let json = match exchange.response_json {
            Some(v) => Some(v.clone()),
            None => exchange
                .response_body
                .and_then(|b| serde_json::from_slice::<Value>(b).ok()),
        };
        created_ids(location, json.as_ref())
    });
    let kept_case = matches!(method.as_str(), "DELETE" | "POST").then(|| Arc::new(case.clone()));
    Some(Visit {
        seq: exchange.interaction.seq,
        interaction: exchange.id,
        method,
        template: case.path.clone(),
        path: url_path(&exchange.interaction.request.url),
        status,
        identity: case.identity.clone(),
        mutated: case.mutation.is_some(),
        start_us,
        end_us,
        created: created.flatten(),
        case: kept_case,
    })
}

/// The path of a URL, without its query or fragment and without a trailing `/`.
fn url_path(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme.find('/').map_or("", |at| &after_scheme[at..]);
    let path = path.split(['?', '#']).next().unwrap_or("");
    path.trim_end_matches('/').to_owned()
}

/// The ids an accepted creation's answer names: the last segment of its `Location`, and
/// an `id` (or `…id`, `…Id`, `uuid`) field at the top of its body or inside a wrapper.
/// `None` when it names none.
fn created_ids(location: Option<&str>, body: Option<&Value>) -> Option<BTreeSet<String>> {
    let mut ids = BTreeSet::new();
    if let Some(last) = location
        .map(url_path)
        .and_then(|p| p.rsplit('/').next().map(str::to_owned))
        .filter(|s| !s.is_empty())
    {
        ids.insert(last);
    }
    let mut objects: Vec<&serde_json::Map<String, Value>> = Vec::new();
    if let Some(Value::Object(top)) = body {
        objects.push(top);
        for w in WRAPPERS {
            if let Some(Value::Object(inner)) = top.get(*w) {
                objects.push(inner);
            }
        }
    }
    for object in objects {
        for (k, v) in object {
            let n: String = k
                .chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect();
            if !(n == "id" || n == "uuid" || n.ends_with("id")) {
                continue;
            }
            match v {
                Value::String(s) => {
                    ids.insert(s.clone());
                }
                Value::Number(n) => {
                    ids.insert(n.to_string());
                }
                _ => {}
            }
        }
    }
    (!ids.is_empty()).then_some(ids)
}

/// What the traffic oracles switched on judge.
pub struct Switches {
    pub deleted_still_available: bool,
    pub created_not_retrievable: bool,
}

/// Judges the visits of one run (in any order: they are put in sequence order first).
pub fn judge(api: &Api, mut visits: Vec<Visit>, on: &Switches) -> Vec<Late> {
    visits.sort_unstable_by_key(|v| v.seq);
    let mut by_path: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, v) in visits.iter().enumerate() {
        by_path.entry(v.path.as_str()).or_default().push(i);
    }
    let mut out = Vec::new();
    if on.deleted_still_available {
        out.extend(deleted_still_available(&visits, &by_path));
    }
    if on.created_not_retrievable {
        out.extend(created_not_retrievable(api, &visits, &by_path));
    }
    out
}

/// The parent path of `path`: `/tags/7` → `/tags`.
fn parent(path: &str) -> Option<(&str, &str)> {
    path.rsplit_once('/')
}

/// Whether visit `c` is a creation that could have made `path` again between `from` and
/// `to` (microseconds): a PUT of it, or a POST to its collection whose answer named that
/// id or named none.
fn recreates(c: &Visit, path: &str, from: u64, to: u64) -> bool {
    if !(200..300).contains(&c.status) || c.start_us > to || c.end_us < from {
        return false;
    }
    match c.method.as_str() {
        "PUT" => c.path == path,
        "POST" => parent(path).is_some_and(|(collection, id)| {
            c.path == collection
                && c.created
                    .as_ref()
                    .is_none_or(|ids| ids.iter().any(|x| percent_matches(x, id)))
        }),
        _ => false,
    }
}

/// Whether an id as answered is the path segment sent (which may be percent-encoded).
fn percent_matches(id: &str, segment: &str) -> bool {
    id == segment
        || percent_encoding::percent_decode_str(segment)
            .decode_utf8()
            .is_ok_and(|d| d == id)
}

fn deleted_still_available(visits: &[Visit], by_path: &BTreeMap<&str, Vec<usize>>) -> Vec<Late> {
    let info = &super::deleted_still_available::INFO;
    let creations: Vec<&Visit> = visits
        .iter()
        .filter(|v| matches!(v.method.as_str(), "POST" | "PUT"))
        .collect();
    let mut out = Vec::new();
    for d in visits {
        // A changed DELETE is left out: what it changed may be what kept the resource.
        if d.method != "DELETE" || d.mutated || !(200..300).contains(&d.status) || d.status == 202 {
            continue;
        }
        let Some(case) = &d.case else { continue };
        let same_path = by_path.get(d.path.as_str()).map_or(&[][..], Vec::as_slice);
        let read = same_path.iter().map(|&j| &visits[j]).find(|r| {
            r.seq > d.seq
                && r.method == "GET"
                && !r.mutated
                && r.identity == d.identity
                && r.start_us >= d.end_us
                && (200..300).contains(&r.status)
                && !creations
                    .iter()
                    .any(|c| recreates(c, &d.path, d.start_us, r.end_us))
        });
        let Some(read) = read else { continue };
        let message = format!(
            "DELETE {} answered {}, and a later GET of the same path (interaction {}) still \
             answered {}, with nothing created there in between: the resource was not \
             deleted",
            d.path, d.status, read.seq, read.status
        );
        out.push(Late {
            observation: per_operation(info, &case.operation, "", message),
            interaction: d.interaction,
            seq: d.seq,
            case: case.clone(),
        });
    }
    out
}

fn created_not_retrievable(
    api: &Api,
    visits: &[Visit],
    by_path: &BTreeMap<&str, Vec<usize>>,
) -> Vec<Late> {
    let info: &'static OracleInfo = &super::created_not_retrievable::INFO;
    // Collection templates whose items the document reads: `/tags` of `GET /tags/{id}`.
    let readable: BTreeSet<&str> = api
        .operations
        .iter()
        .filter(|o| o.key.method.eq_ignore_ascii_case("GET"))
        .filter_map(|o| {
            let (head, last) = o.key.path.trim_end_matches('/').rsplit_once('/')?;
            (last.starts_with('{') && last.ends_with('}')).then_some(head)
        })
        .collect();
    let mut out = Vec::new();
    for c in visits {
        if c.method != "POST" || c.status != 201 || c.mutated {
            continue;
        }
        let (Some(case), Some(ids)) = (&c.case, &c.created) else {
            continue;
        };
        if !readable.contains(c.template.trim_end_matches('/')) {
            continue;
        }
        for id in ids.iter().filter(|id| plain_segment(id)) {
            let item = format!("{}/{id}", c.path);
            let Some(at) = by_path.get(item.as_str()) else {
                continue;
            };
            // Reads up to the first DELETE of the item sent after the creation, by anyone and
            // whatever it was answered: after one, a 404 is what a read should get. The
            // DELETE is found by send order, not by the stored times, which are whole
            // milliseconds: a DELETE sent in the millisecond the creation was answered in
            // would otherwise be missed and the reads after it taken for reads of a
            // resource that never appeared.
            let first_delete = at
                .iter()
                .map(|&j| &visits[j])
                .filter(|v| v.method == "DELETE" && v.seq > c.seq)
                .min_by_key(|v| v.seq);
            let reads: Vec<&Visit> = at
                .iter()
                .map(|&j| &visits[j])
                .filter(|v| v.identity == c.identity && v.start_us >= c.end_us)
                .filter(|v| v.method == "GET" && !v.mutated)
                .filter(|v| first_delete.is_none_or(|d| v.seq < d.seq && v.end_us <= d.start_us))
                .collect();
            if reads.is_empty() || !reads.iter().all(|r| matches!(r.status, 404 | 410)) {
                continue;
            }
            let message = format!(
                "POST {} answered 201 for {item}, and each of the {} reads of it after that \
                 answered {}: it cannot be read back",
                c.path,
                reads.len(),
                reads[0].status
            );
            out.push(Late {
                observation: per_operation(info, &case.operation, "", message),
                interaction: c.interaction,
                seq: c.seq,
                case: case.clone(),
            });
        }
    }
    out
}

/// An id that is a path segment as it is (unreserved characters only), so the path a read
/// sent can be compared with it as text.
fn plain_segment(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api() -> Api {
        let doc = serde_json::json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
            "paths": {"/tags": {"post": {"responses": {"201": {"description": "ok"}}}},
                      "/tags/{id}": {"parameters": [{"name": "id", "in": "path", "required": true,
                                                     "schema": {"type": "string"}}],
                                     "get": {"responses": {"200": {"description": "ok"}}},
                                     "delete": {"responses": {"204": {"description": "ok"}}}}}});
        crate::spec::parse(doc.to_string().as_bytes(), "t.json", None).unwrap()
    }

    /// A visit at `seq`, sent at `ms` milliseconds and answered within it.
    fn at(seq: u64, ms: u64, method: &str, path: &str, status: u16) -> Visit {
        let template = if path == "/tags" {
            "/tags"
        } else {
            "/tags/{id}"
        };
        let case = TestCase {
            operation: format!("{method} {template}"),
            method: method.into(),
            path: template.into(),
            parameters: Vec::new(),
            body: None,
            strategy: crate::model::Strategy::Nominal,
            mode: String::new(),
            origins: Default::default(),
            intent: Default::default(),
            mutation: None,
            series_step: None,
            credentials: None,
            shrinking: None,
            identity: None,
        };
        Visit {
            seq,
            interaction: InteractionId(crate::ids::Digest::of(&seq.to_le_bytes())),
            method: method.into(),
            template: template.into(),
            path: path.into(),
            status,
            identity: None,
            mutated: false,
            start_us: ms * 1000,
            end_us: ms * 1000 + 1000,
            created: None,
            case: Some(Arc::new(case)),
        }
    }

    fn judged(visits: Vec<Visit>) -> Vec<String> {
        let on = Switches {
            deleted_still_available: true,
            created_not_retrievable: true,
        };
        judge(&api(), visits, &on)
            .into_iter()
            .map(|l| l.observation.key_by_message)
            .collect()
    }

    fn created(mut v: Visit, id: &str) -> Visit {
        v.created = Some(BTreeSet::from([id.to_owned()]));
        v
    }

    #[test]
    fn a_read_after_an_answered_delete_that_finds_the_resource_is_a_finding() {
        let found = judged(vec![
            at(1, 10, "DELETE", "/tags/7", 204),
            at(2, 20, "GET", "/tags/7", 200),
        ]);
        assert_eq!(found, ["deleted_still_available|DELETE /tags/{id}|"]);
        // Whatever order the visits were noted in.
        let found = judged(vec![
            at(2, 20, "GET", "/tags/7", 200),
            at(1, 10, "DELETE", "/tags/7", 204),
        ]);
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn no_false_alarm_for_reuse_202_concurrency_or_another_identity() {
        // The id made again by a creation in between.
        assert!(judged(vec![
            at(1, 10, "DELETE", "/tags/7", 204),
            created(at(2, 15, "POST", "/tags", 201), "7"),
            at(3, 20, "GET", "/tags/7", 200),
        ])
        .is_empty());
        // A creation naming no id may have made it.
        assert!(judged(vec![
            at(1, 10, "DELETE", "/tags/7", 204),
            at(2, 15, "POST", "/tags", 200),
            at(3, 20, "GET", "/tags/7", 200),
        ])
        .is_empty());
        // A creation naming another id did not.
        assert_eq!(
            judged(vec![
                at(1, 10, "DELETE", "/tags/7", 204),
                created(at(2, 15, "POST", "/tags", 201), "8"),
                at(3, 20, "GET", "/tags/7", 200),
            ])
            .len(),
            1
        );
        // 202 promises the deletion later.
        assert!(judged(vec![
            at(1, 10, "DELETE", "/tags/7", 202),
            at(2, 20, "GET", "/tags/7", 200),
        ])
        .is_empty());
        // A read sent before the DELETE was answered (another worker) proves nothing.
        assert!(judged(vec![
            at(1, 10, "DELETE", "/tags/7", 204),
            at(2, 10, "GET", "/tags/7", 200),
        ])
        .is_empty());
        // Another identity's read.
        let mut other = at(2, 20, "GET", "/tags/7", 200);
        other.identity = Some("bob".into());
        assert!(judged(vec![at(1, 10, "DELETE", "/tags/7", 204), other]).is_empty());
    }

    #[test]
    fn a_created_id_every_read_of_which_answers_404_is_a_finding() {
        let post = || created(at(1, 10, "POST", "/tags", 201), "7");
        let found = judged(vec![
            post(),
            at(2, 20, "GET", "/tags/7", 404),
            at(3, 30, "GET", "/tags/7", 404),
        ]);
        assert_eq!(found, ["created_not_retrievable|POST /tags|"]);
        // Read back once: no finding.
        assert!(judged(vec![
            post(),
            at(2, 20, "GET", "/tags/7", 404),
            at(3, 30, "GET", "/tags/7", 200),
        ])
        .is_empty());
        // 404 after a DELETE of it is what a read should get; never read: nothing known.
        assert!(judged(vec![
            post(),
            at(2, 20, "DELETE", "/tags/7", 204),
            at(3, 30, "GET", "/tags/7", 404),
        ])
        .is_empty());
        assert!(judged(vec![post()]).is_empty());
        // A DELETE sent in the millisecond the creation was answered in still ends the
        // reads that count (stored times are whole milliseconds).
        let mut delete = at(2, 10, "DELETE", "/tags/7", 204);
        delete.start_us = 10_000;
        assert!(judged(vec![post(), delete, at(3, 30, "GET", "/tags/7", 404)]).is_empty());
        // So does another identity's DELETE.
        let mut delete = at(2, 20, "DELETE", "/tags/7", 204);
        delete.identity = Some("bob".into());
        assert!(judged(vec![post(), delete, at(3, 30, "GET", "/tags/7", 404)]).is_empty());
    }
}
