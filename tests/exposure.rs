//! Issue 49 on the users fixture (`probe::fixture::users`), two identities that log in:
//! secrets shown in answers (`secret_in_reply`), a login that tells a known user from an
//! unknown one (`user_enumeration`), and a login that stops giving tokens in the middle of
//! a run. Each fault is found with its evidence, the twin without it stays silent, and
//! `recheck` judges the stored run the same way.

use std::path::Path;

use probe::fixture::users::{self, Faults, USERS};
use serde_json::Value;

use crate::util::{code, findings_of, probe, run, run_document, run_id};

/// Two identities, alice (the default) and bob, each logging in at `POST /login`.
fn probe_toml() -> String {
    let mut text = String::new();
    for (user, password) in &USERS[..2] {
        text.push_str(&format!(
            "[[identity]]\nname = \"{user}\"\n[identity.login]\npath = \"/login\"\n\
             json = {{ username = \"{user}\", password = \"{password}\" }}\n\
             token = \"/access_token\"\n\n"
        ));
    }
    text
}

/// One run of the users API with `faults`, `requests` requests, `extra` arguments; returns
/// the output, report.json and the directory (kept for a recheck).
pub(crate) fn campaign(
    faults: Faults,
    requests: u64,
    extra: &[&str],
) -> (std::process::Output, Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("users.yaml");
    std::fs::write(&spec, users::DOCUMENT).unwrap();
    std::fs::write(dir.path().join("probe.toml"), probe_toml()).unwrap();
    let mut args = vec!["--budget", "60s"];
    args.extend(extra);
    let (out, report) = run_document(
        users::router(faults),
        &spec,
        dir.path(),
        7,
        2,
        requests,
        &args,
    );
    (out, report, dir)
}

/// (operation, message) of every finding of `oracle`, sorted.
pub(crate) fn findings(report: &Value, oracle: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = findings_of(report, oracle)
        .iter()
        .map(|f| {
            (
                f["operation"].as_str().unwrap_or_default().to_owned(),
                f["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

/// `recheck` of the run `report` names, in `dir`: its finding set is the run's.
pub(crate) fn assert_recheck_agrees(dir: &Path, report: &Value) {
    let store = dir.join("store");
    let out = run(probe(dir).args([
        "--store",
        store.to_str().unwrap(),
        "recheck",
        &run_id(report).to_string(),
        "--json",
    ]));
    let v: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(v["data"]["finding_set"], v["data"]["baseline"], "{v}");
}

#[test]
fn passwords_in_answers_are_found_and_the_twin_that_masks_them_is_silent() {
    let faulty = Faults {
        secrets: true,
        ..Faults::default()
    };
    let (out, report, dir) = campaign(faulty, 150, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings(&report, "secret_in_reply");
    let places: Vec<(&str, bool)> = found
        .iter()
        .map(|(op, message)| {
            (
                op.as_str(),
                message.contains("`[].password` holding a password")
                    || message.contains("`password` holding a password"),
            )
        })
        .collect();
    assert_eq!(
        places,
        [("listUsers", true), ("whoAmI", true)],
        "{found:#?}"
    );
    // The login's own `access_token` is what a login answers: not a leak.
    assert!(found.iter().all(|(op, _)| op != "logIn"));
    // Never the value itself: carol's password is nobody's credential here.
    let text = serde_json::to_string(&report).unwrap();
    assert!(
        !text.contains(USERS[2].1),
        "the report shows a leaked password"
    );
    let f = &findings_of(&report, "secret_in_reply")[0];
    assert_eq!(f["code"], "F211");
    assert_eq!(f["severity"], "high");
    assert_recheck_agrees(dir.path(), &report);

    let (out, report, _dir) = campaign(Faults::default(), 150, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        findings(&report, "secret_in_reply"),
        [],
        "the twin masks them"
    );
}

/// The default identity's account is locked out after its second login (its tokens live
/// 300 ms, so the second comes after a 401): its next request is refused, the login again
/// answers 200 without a token. The run ends there with its
/// report (the ordinary requests are all the default identity's), and says which identity,
/// when and why, rather than ending with the start-time error and no report.
#[test]
fn a_default_identity_whose_login_again_fails_ends_the_run_with_its_report() {
    let faults = Faults {
        tokens_for: Some(("alice".into(), 2)),
        token_life: Some(std::time::Duration::from_millis(300)),
        ..Faults::default()
    };
    let (out, report, _dir) = campaign(faults, 200, &["--rate-limit", "100"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(code(&out) <= 1, "{stderr}");
    let alice = &report["identities"][0];
    assert_eq!(alice["name"], "alice");
    // Three logins as configured, then a few with the passwords the run sent (the users
    // API takes some at registration) before alice is given up.
    let logins = alice["logins"].as_u64().unwrap_or(0);
    assert!((3..=11).contains(&logins), "{alice}");
    let reason = alice["unusable"]["reason"].as_str().unwrap_or_default();
    assert_eq!(
        reason, "answer holds no token at `/access_token`",
        "{alice}"
    );
    assert!(alice["unusable"]["after_ms"].as_u64().is_some(), "{alice}");
    assert!(report["identities"][1]["unusable"].is_null(), "{report:#}");
    assert!(
        stderr.contains("probe: identity `alice` could not log in again")
            && stderr.contains("so the run ended there"),
        "{stderr}"
    );
    // It ended early: far fewer than the 200 requests asked for were answered.
    let requests = report["totals"]["requests"].as_u64().unwrap();
    assert!((1..150).contains(&requests), "{}", report["totals"]);
}

/// The second identity's account is locked out after its first login: its requests (the
/// access series' steps as another identity) are refused, its login again answers no
/// token; it sends nothing more, and the run goes on with the default identity to the end.
#[test]
fn another_identity_whose_login_again_fails_is_left_out_and_the_run_goes_on() {
    let faults = Faults {
        tokens_for: Some(("bob".into(), 1)),
        ..Faults::default()
    };
    let (out, report, dir) = campaign(faults, 200, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(code(&out) <= 1, "{stderr}");
    let bob = &report["identities"][1];
    assert_eq!(bob["name"], "bob");
    let logins = bob["logins"].as_u64().unwrap_or(0);
    assert!((2..=10).contains(&logins), "{bob}");
    assert_eq!(
        bob["unusable"]["reason"], "answer holds no token at `/access_token`",
        "{bob}"
    );
    assert!(report["identities"][0]["unusable"].is_null(), "{report:#}");
    assert!(
        stderr.contains("probe: identity `bob` could not log in again")
            && !stderr.contains("the run ended there"),
        "{stderr}"
    );
    // The run went on to the requests asked for.
    assert!(
        report["totals"]["requests"].as_u64().unwrap() >= 200,
        "{}",
        report["totals"]
    );
    // The request as bob that found the account locked is recorded as cancelled, not as
    // the 401 a stale token got: that 401 says nothing of the operation.
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let mut cancelled_as_bob = 0;
    for row in store.interactions_of(run_id(&report)).unwrap() {
        let i: probe::model::Interaction = store.get(row.id.0).unwrap();
        let case: probe::model::TestCase = store.get(i.case.0).unwrap();
        if case.identity.as_deref() == Some("bob") {
            assert_ne!(i.outcome.status(), Some(401), "{:?}", i.request.url);
            if i.outcome.status().is_none() {
                cancelled_as_bob += 1;
            }
        }
    }
    assert!(cancelled_as_bob >= 1, "no request as bob was cancelled");
}

/// A login that answers an unknown user 404 `user does not exist` and a known one 401
/// `password is not correct` is found, by the `enumeration` series' three logins; the twin,
/// which answers both 401 with the same words (the username echoed), is silent.
#[test]
fn a_login_that_tells_known_users_from_unknown_ones_is_found_and_its_twin_is_silent() {
    let faulty = Faults {
        enumeration: true,
        ..Faults::default()
    };
    let (out, report, dir) = campaign(faulty, 120, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings(&report, "user_enumeration");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].0, "logIn");
    assert!(
        found[0].1.contains("tells users apart by its status")
            && found[0].1.contains("401")
            && found[0].1.contains("404"),
        "{found:#?}"
    );
    let f = &findings_of(&report, "user_enumeration")[0];
    assert_eq!(f["code"], "F212");
    assert!(!f["series"].is_null(), "{f:#}");
    // The wrong password is no secret; the real ones never show.
    let text = serde_json::to_string(&report).unwrap();
    assert!(!text.contains(USERS[0].1) && !text.contains(USERS[1].1));
    assert_recheck_agrees(dir.path(), &report);

    let (out, report, _dir) = campaign(Faults::default(), 120, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        findings(&report, "user_enumeration"),
        [],
        "the twin answers alike"
    );
    // The series ran on the twin too: the oracle was asked, and said nothing.
    let store = probe::store::Store::open_existing(&_dir.path().join("store")).unwrap();
    let mut logins_as_nobody = 0;
    for row in store.interactions_of(run_id(&report)).unwrap() {
        let i: probe::model::Interaction = store.get(row.id.0).unwrap();
        let case: probe::model::TestCase = store.get(i.case.0).unwrap();
        let body = case
            .body
            .as_ref()
            .map(|b| b.value.to_string())
            .unwrap_or_default();
        if case.series_step.is_some() && body.contains("probe-nobody-") {
            logins_as_nobody += 1;
        }
    }
    assert_eq!(logins_as_nobody, 2, "the twin's enumeration series");
}
