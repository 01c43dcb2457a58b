//! Issue 49 on the profiles fixture (`probe::fixture::profiles`), two identities that log
//! in: the default identity changing the other's password (`credential_changed_by_other`),
//! and an e-mail check that stalls the whole server, reported once at the request that
//! began the stall (`transport_failure`). Each fault is found with its evidence, the twin
//! stays silent, and `recheck` judges the stored run the same way.

use std::path::Path;
use std::time::Duration;

use probe::fixture::profiles::{self, Faults, USERS};
use serde_json::Value;

use crate::util::{code, findings_of, probe, run, run_document, run_id};

/// alice (the default) and bob, each logging in at `POST /login`.
fn probe_toml() -> String {
    let mut text = String::new();
    for (user, password) in &USERS {
        text.push_str(&format!(
            "[[identity]]\nname = \"{user}\"\n[identity.login]\npath = \"/login\"\n\
             json = {{ username = \"{user}\", password = \"{password}\" }}\n\
             token = \"/access_token\"\n\n"
        ));
    }
    text
}

fn campaign(
    faults: Faults,
    requests: u64,
    workers: usize,
    extra: &[&str],
) -> (std::process::Output, Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("profiles.yaml");
    std::fs::write(&spec, profiles::DOCUMENT).unwrap();
    std::fs::write(dir.path().join("probe.toml"), probe_toml()).unwrap();
    let mut args = vec!["--budget", "60s"];
    args.extend(extra);
    let (out, report) = run_document(
        profiles::router(faults),
        &spec,
        dir.path(),
        5,
        workers,
        requests,
        &args,
    );
    (out, report, dir)
}

/// `recheck` of the run `report` names, in `dir`: its finding set is the run's.
fn assert_recheck_agrees(dir: &Path, report: &Value) {
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

/// alice may change bob's password: the `credential_change` series changes it, bob's login
/// as configured is then refused (answered 200 `fail`, as the wrong password was) and the
/// new password logs bob in. The series sets bob's password back, so bob's login works
/// for the rest of the run. The twin refuses the change (403) and is silent.
#[test]
fn another_identitys_password_changed_is_found_and_the_twin_is_silent() {
    let faulty = Faults {
        others_password: true,
        ..Faults::default()
    };
    let (out, report, dir) = campaign(faulty, 150, 2, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings_of(&report, "credential_changed_by_other");
    assert_eq!(found.len(), 1, "{found:#?}");
    let f = found[0];
    assert_eq!(f["operation"], "setPassword");
    assert_eq!(f["code"], "F220");
    assert_eq!(f["severity"], "high");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("changed that user's password")
            && message.contains("login as configured was then refused")
            && message.contains("the value the change set logged it in"),
        "{message}"
    );
    assert!(!f["series"].is_null(), "{f:#}");
    // Set back: bob could still log in at the end, and was never marked unusable.
    assert!(report["identities"][1]["unusable"].is_null(), "{report:#}");
    // No password shows in the report, bob's own least of all.
    let text = serde_json::to_string(&report).unwrap();
    assert!(!text.contains(USERS[0].1) && !text.contains(USERS[1].1));
    assert_recheck_agrees(dir.path(), &report);

    let (out, report, dir) = campaign(Faults::default(), 150, 2, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        findings_of(&report, "credential_changed_by_other").len(),
        0,
        "the twin refuses the change"
    );
    // The series ran on the twin too: its change as alice for bob was sent and refused.
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let mut refused = 0;
    for row in store.interactions_of(run_id(&report)).unwrap() {
        let i: probe::model::Interaction = store.get(row.id.0).unwrap();
        let case: probe::model::TestCase = store.get(i.case.0).unwrap();
        if case.series_step.is_some()
            && case.operation == "setPassword"
            && i.request.url.ends_with("/users/bob/password")
        {
            assert_eq!(i.outcome.status(), Some(403));
            refused += 1;
        }
    }
    assert_eq!(refused, 1, "one change of bob's password was asked");
}

/// The e-mail check holds the whole server 3 s on a long address without `@`; with a
/// 500 ms timeout every request sent then times out. One worker: the request that began the
/// stall is the first that never came back, not one sent at the same time. The stall is one finding, of
/// `setEmail`, whose reproducer is the request that began it; the timeouts of the other
/// operations are counted in it rather than as findings of their own. The twin refuses
/// the same address at once and has no timeout at all.
#[test]
fn a_server_wide_stall_is_one_finding_at_the_request_that_began_it() {
    let faulty = Faults {
        stall: Some(Duration::from_secs(3)),
        ..Faults::default()
    };
    let extra = [
        "--set",
        "send.timeout=500ms",
        "--set",
        "series.enabled=false",
    ];
    let (out, report, dir) = campaign(faulty, 120, 1, &extra);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings_of(&report, "transport_failure");
    let operations: Vec<&str> = found
        .iter()
        .map(|f| f["operation"].as_str().unwrap())
        .collect();
    assert_eq!(operations, ["setEmail"], "{found:#?}");
    let f = found[0];
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("where the stall began") && message.contains("other operations"),
        "{message}; totals {}",
        report["totals"]
    );
    // Its reproducer is an e-mail the check backtracks on: long, without `@`.
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let id = f["reproducer"]
        .as_str()
        .or(f["interactions"][0].as_str())
        .unwrap();
    let first: probe::model::Interaction = store
        .get(probe::ids::Digest::from_hex(id).expect("an interaction id"))
        .unwrap();
    let case: probe::model::TestCase = store.get(first.case.0).unwrap();
    let email = case.body.as_ref().unwrap().value["email"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        email.chars().count() >= 16 && !email.contains('@'),
        "{email}"
    );
    assert!(f["occurrences"].as_u64().unwrap() >= 2, "{f:#}");
    assert_recheck_agrees(dir.path(), &report);

    let (out, report, _dir) = campaign(Faults::default(), 120, 1, &extra);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(findings_of(&report, "transport_failure").len(), 0);
}

/// The default identity changes its own password in ordinary traffic (the twin lets a
/// user change their own), which ends its sessions: its next request is answered 401, and
/// its login as configured is refused. probe logs in with the password the accepted
/// request set, and the run goes on; before, the identity was unusable and the run ended.
#[test]
fn an_identity_that_changed_its_own_password_logs_in_with_it_and_the_run_goes_on() {
    let (out, report, _dir) = campaign(Faults::default(), 300, 1, &[]);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let alice = &report["identities"][0];
    assert_eq!(alice["name"], "alice", "{alice}");
    assert!(alice.get("unusable").is_none(), "{alice}");
    assert!(
        alice["logins_with_a_set_password"].as_u64().unwrap_or(0) >= 1,
        "the run changed alice's password and logged in with it: {alice}"
    );
    assert_eq!(
        report["totals"]["requests"], 300,
        "the run went on to its end"
    );
}

/// The profiles API answers a wrong password `200 {"status": "fail"}` and never limits
/// failed logins: the burst goes on past its first 2xx (each one a refusal by its body,
/// holding no token) and `login_not_rate_limited` is found.
#[test]
fn a_login_refused_with_200_and_never_limited_is_found() {
    let on = ["--set", "checks.login_not_rate_limited=true"];
    let (out, report, _dir) = campaign(Faults::default(), 150, 1, &on);
    assert!(code(&out) <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let found = findings_of(&report, "login_not_rate_limited");
    assert_eq!(found.len(), 1, "{found:#?}");
    let message = found[0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("with 200 each time"), "{message}");
}
