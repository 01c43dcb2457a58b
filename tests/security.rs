//! Issue 49, the oracles that forge or push: a bearer token forged from the API's own
//! (`token_forgery`), a burst of failed logins (`login_not_rate_limited`), on the users
//! fixture (`probe::fixture::users`) with two identities that log in. Each fault is found
//! with its evidence, the twin without it stays silent (while the series still ran), and
//! `recheck` judges the stored run the same way.

use probe::fixture::users::{Faults, FAILED_LOGINS};
use probe::model::{CredentialProbe, Interaction, TestCase};
use serde_json::Value;

use crate::exposure::{assert_recheck_agrees, campaign, findings};
use crate::util::{code, findings_of, run_id};

/// Every (case, interaction) of the run `report` names, in `dir`'s store.
fn exchanges(dir: &std::path::Path, report: &Value) -> Vec<(TestCase, Interaction)> {
    let store = probe::store::Store::open_existing(&dir.join("store")).unwrap();
    store
        .interactions_of(run_id(report))
        .unwrap()
        .into_iter()
        .map(|row| {
            let i: Interaction = store.get(row.id.0).unwrap();
            let case: TestCase = store.get(i.case.0).unwrap();
            (case, i)
        })
        .collect()
}

/// The users API signs its tokens (HS256) with `secret` and takes `alg: none`: both
/// forgeries are found, the weak key named; the forged tokens are kept as sent, the real
/// ones never. The twin (a long random key, `alg: none` refused) is silent, though it was
/// sent the forgeries.
#[test]
fn tokens_signed_with_a_weak_key_or_taken_unsigned_are_found_and_the_twin_is_silent() {
    let faulty = Faults {
        weak_key: true,
        alg_none: true,
        ..Faults::default()
    };
    let (out, report, dir) = campaign(faulty, 120, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings(&report, "token_forgery");
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(
        found
            .iter()
            .any(|(_, m)| m.contains("re-signed with a weak key")
                && m.contains("with the key `secret`")
                && m.contains("without it 401")),
        "{found:#?}"
    );
    assert!(
        found.iter().any(|(_, m)| m.contains("`alg: none`")),
        "{found:#?}"
    );
    // The key `secret` is checked first against a token signed with another key: the
    // API checks signatures, so the weak key's finding stands on its own.
    assert!(!found
        .iter()
        .any(|(_, m)| m.contains("does not check signatures")));
    let f = &findings_of(&report, "token_forgery")[0];
    assert_eq!(f["code"], "F214");
    assert_eq!(f["severity"], "high");
    assert!(!f["series"].is_null(), "{f:#}");
    // Forged tokens are stored as sent; the API's own never.
    let mut forged = 0;
    for (case, i) in exchanges(dir.path(), &report) {
        let auth = i
            .request
            .headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .map(|(_, v)| v.clone());
        match case.credentials {
            Some(
                CredentialProbe::ForgedAlgNone
                | CredentialProbe::ForgedUnsigned
                | CredentialProbe::ForgedWeakKey
                | CredentialProbe::ForgedOtherKey,
            ) => {
                forged += 1;
                assert!(auth.unwrap().starts_with("Bearer ey"));
            }
            None => {
                // The token the login gave is kept as the placeholder, never as sent.
                if let Some(auth) = auth {
                    assert!(
                        auth.ends_with("<probe:secret>") && !auth.contains("ey"),
                        "{auth}: {case:#?}"
                    );
                }
            }
            _ => {}
        }
    }
    assert_eq!(forged, 4, "other key, weak key, alg none, unsigned");
    assert_recheck_agrees(dir.path(), &report);

    let (out, report, dir) = campaign(Faults::default(), 120, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        findings(&report, "token_forgery"),
        [],
        "the twin checks its tokens"
    );
    // The series ran: the three forgeries a strong key leaves (no weak key signed it),
    // each refused.
    let refused: Vec<u16> = exchanges(dir.path(), &report)
        .iter()
        .filter(|(c, _)| {
            c.credentials
                .is_some_and(|p| p != CredentialProbe::Withheld && p != CredentialProbe::Unknown)
        })
        .map(|(_, i)| i.outcome.status().unwrap_or(0))
        .collect();
    assert_eq!(refused, [401, 401, 401], "the twin's forgery series");
}

/// With `checks.login_not_rate_limited` on, alice's login is sent 20 times with a wrong
/// password: the API that never limits is found; the twin, which answers 429 past 10
/// failures in two seconds, is silent; with the switch off (its default) no burst is sent.
#[test]
fn a_login_without_a_limit_on_failures_is_found_and_the_twin_that_answers_429_is_silent() {
    let on = ["--set", "checks.login_not_rate_limited=true"];
    let faulty = Faults {
        unlimited_logins: true,
        ..Faults::default()
    };
    let (out, report, dir) = campaign(faulty.clone(), 120, &on);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings(&report, "login_not_rate_limited");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, "logIn");
    // The whole burst, or what of it the run's budget left room for (at least 10 answers
    // are judged).
    let answered: usize = found[0]
        .1
        .split("answered ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        (10..=20).contains(&answered)
            && found[0].1.contains("failed logins of one user")
            && found[0].1.contains("with 401 each time, never 429 or 423"),
        "{found:#?}"
    );
    let f = &findings_of(&report, "login_not_rate_limited")[0];
    assert_eq!(f["code"], "F213");
    assert_recheck_agrees(dir.path(), &report);

    let (out, report, dir) = campaign(Faults::default(), 120, &on);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        findings(&report, "login_not_rate_limited"),
        [],
        "the twin limits"
    );
    let burst: Vec<u16> = burst_statuses(dir.path(), &report);
    assert_eq!(
        burst.last(),
        Some(&429),
        "the twin's burst ends at its limit: {burst:?}"
    );
    assert!(burst.len() <= FAILED_LOGINS + 1, "{burst:?}");

    // Off by default: no burst.
    let (out, report, dir) = campaign(faulty, 120, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(findings(&report, "login_not_rate_limited"), []);
    assert_eq!(burst_statuses(dir.path(), &report), Vec::<u16>::new());
}

/// The statuses of the `login_burst` series' steps, in order: the series that sent alice's
/// login with the wrong password most often (the `enumeration` series sends it once).
fn burst_statuses(dir: &std::path::Path, report: &Value) -> Vec<u16> {
    let mut by_series: std::collections::BTreeMap<String, Vec<(u64, u16)>> = Default::default();
    for (c, i) in exchanges(dir, report) {
        let (Some(step), Some(body)) = (&c.series_step, &c.body) else {
            continue;
        };
        if body.value["username"] == "alice" && body.value["password"] == "probe-wrong-Passw0rd!" {
            by_series
                .entry(step.series.clone())
                .or_default()
                .push((i.seq, i.outcome.status().unwrap_or(0)));
        }
    }
    let mut steps = by_series
        .into_values()
        .max_by_key(Vec::len)
        .filter(|s| s.len() > 1)
        .unwrap_or_default();
    steps.sort_unstable();
    steps.into_iter().map(|(_, s)| s).collect()
}

/// A book's title is unique: the users API with `duplicate_500` answers a second book of a
/// taken title 500, which the life cycle's `create_duplicate` step finds (naming the
/// title); the twin answers 409 and is silent, though it was sent the duplicate.
#[test]
fn a_taken_title_that_breaks_the_server_is_found_and_the_twin_that_answers_409_is_silent() {
    let faulty = Faults {
        duplicate_500: true,
        ..Faults::default()
    };
    let (out, report, dir) = campaign(faulty, 150, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings(&report, "duplicate_value_unhandled");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, "createBook");
    assert!(
        found[0]
            .1
            .contains("answered 500 to a creation whose `title`")
            && found[0].1.contains("(201) already holds"),
        "{found:#?}"
    );
    let f = &findings_of(&report, "duplicate_value_unhandled")[0];
    assert_eq!(f["code"], "F216");
    assert!(!f["series"].is_null(), "{f:#}");
    assert_recheck_agrees(dir.path(), &report);

    let (out, report, dir) = campaign(Faults::default(), 150, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(findings(&report, "duplicate_value_unhandled"), []);
    let duplicates: Vec<u16> = exchanges(dir.path(), &report)
        .iter()
        .filter(|(c, _)| {
            c.operation == "createBook"
                && c.series_step.is_some()
                && c.body
                    .as_ref()
                    .is_some_and(|b| b.value["title"].as_str().is_some_and(|t| t.contains("-s")))
        })
        .map(|(_, i)| i.outcome.status().unwrap_or(0))
        .collect();
    assert!(
        duplicates.contains(&409),
        "the twin's duplicate: {duplicates:?}"
    );
}
