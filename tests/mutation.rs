//! Negative testing with intent, end to end: changed requests find what nominal ones cannot,
//! F102 names the place, and a validating API gives no F102 at all.

use probe::fixture::{orders, RunningFixture};
use serde_json::Value;

use crate::util::{code, findings_of, repo, run_id, Campaign};

fn run_orders(
    dir: &std::path::Path,
    build: orders::Build,
    seed: u64,
    extra: &[&str],
) -> (i32, Value, String) {
    let fixture = RunningFixture::start(orders::router(build)).expect("fixture starts");
    let spec = repo().join("fixtures/orders/openapi.yaml");
    let campaign = Campaign {
        spec: &spec,
        url: &fixture.base_url(),
        seed,
        workers: 4,
        requests: 1500,
    };
    let (out, report) = campaign.run(dir, extra);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (code(&out), report, stdout)
}

#[test]
fn a_500_reachable_only_by_a_wrong_type_in_the_body_is_found_by_a_changed_request() {
    let dir = tempfile::tempdir().unwrap();
    let (code, report, stdout) = run_orders(dir.path(), orders::Build::Faulty, 5, &[]);
    assert_eq!(code, 1);
    let crashes = findings_of(&report, "server_error");
    assert!(!crashes.is_empty(), "the crash is found");
    // A value of the wrong type there: another type (wrongType) or null (sendNull, null
    // being a type the schema does not allow); the finding names the earliest change.
    let by_change = crashes
        .iter()
        .find(|f| {
            f["mutation"]["place"] == "body.quantity"
                && matches!(
                    f["mutation"]["kind"].as_str(),
                    Some("wrongType" | "sendNull")
                )
        })
        .unwrap_or_else(|| {
            panic!("a server error names a wrong-type change at body.quantity: {crashes:?}")
        });
    assert_eq!(by_change["intent"], "refusal_expected");
    let kind = by_change["mutation"]["kind"].as_str().unwrap();
    assert!(
        stdout.contains(&format!("changed: {kind} at body.quantity")),
        "the summary names the change:\n{stdout}"
    );
    // The console counts requests by what they were.
    assert!(stdout.contains(" changed ("), "{stdout}");
    assert!(stdout.contains(" nominal"), "{stdout}");
    assert!(stdout.contains(" pushing"), "{stdout}");

    // The same run without the operators never reaches it.
    let (_, plain, _) = run_orders(
        dir.path(),
        orders::Build::Faulty,
        5,
        &["--set", "mutation.violations=false"],
    );
    assert!(
        findings_of(&plain, "server_error")
            .iter()
            .all(|f| f["intent"] == "pushing"),
        "without operators only pushing requests may crash it"
    );
}

#[test]
fn an_api_that_accepts_an_off_enum_value_yields_f102_naming_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report, _) = run_orders(dir.path(), orders::Build::Faulty, 9, &[]);
    let accepted = findings_of(&report, "invalid_data_accepted");
    let off_enum = accepted
        .iter()
        .find(|f| f["mutation"]["kind"] == "breakAnEnumeration")
        .unwrap_or_else(|| panic!("an F102 for an off-enum color: {accepted:?}"));
    assert_eq!(off_enum["code"], "F102");
    assert_eq!(off_enum["mutation"]["place"], "body.color");
    assert!(off_enum["message"].as_str().unwrap().contains("body.color"));
}

#[test]
fn an_api_that_validates_correctly_yields_no_f102() {
    let dir = tempfile::tempdir().unwrap();
    for seed in [1, 2, 3] {
        let (_, report, _) = run_orders(dir.path(), orders::Build::Validating, seed, &[]);
        let accepted = findings_of(&report, "invalid_data_accepted");
        assert!(
            accepted.is_empty(),
            "seed {seed}: no F102 on a validating API: {accepted:?}"
        );
        assert!(report["totals"]["requests_by_kind"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("changed:")));
    }
}

#[test]
fn without_violations_a_run_sends_what_the_plan_without_operators_sends() {
    let dir = tempfile::tempdir().unwrap();
    // The shipped plan with its mutation strategy made nominal: same shares, same sources.
    let plan = dir.path().join("no-operators.yaml");
    let shipped = std::fs::read_to_string(repo().join("fixtures/plans/default.yaml")).unwrap();
    std::fs::write(&plan, shipped.replace("    kind: mutation\n", "")).unwrap();
    let plan_setting = format!("generation.plan={}", plan.display());
    let (_, a, _) = run_orders(
        dir.path(),
        orders::Build::Faulty,
        21,
        &["--set", "mutation.violations=false"],
    );
    let (_, b, _) = run_orders(
        dir.path(),
        orders::Build::Faulty,
        21,
        &["--set", &plan_setting],
    );
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let cases = |r: &Value| -> Vec<String> {
        let run = run_id(r);
        store
            .interactions_of(run)
            .unwrap()
            .iter()
            .map(|row| row.case.to_string())
            .collect()
    };
    let (ca, cb) = (cases(&a), cases(&b));
    assert_eq!(ca.len(), 1500);
    assert!(ca == cb, "the same requests, in the same order");
}

#[test]
fn dictionary_values_are_sent_and_an_unreadable_dictionary_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let dict = dir.path().join("orders.yaml");
    std::fs::write(
        &dict,
        "version: 1\nname: orders\nkeyedBy: operationAndParameter\nvalues:\n  createOrder:\n    body.item: [dictionary-mug]\n  getOrder:\n    orderId: [424242]\n  listOrders:\n    status: [tok-s3cret-77]\n",
    )
    .unwrap();
    let missing = dir.path().join("missing.yaml");
    let setting = format!(
        "generation.dictionaries={},{}",
        dict.display(),
        missing.display()
    );
    let plan = repo().join("fixtures/plans/default.yaml");
    let plan_setting = format!("generation.plan={}", plan.display());
    let (_, report, stdout) = run_orders(
        dir.path(),
        orders::Build::Validating,
        4,
        &[
            "--set",
            &setting,
            "--set",
            &plan_setting,
            "--header",
            "X-Api-Token: tok-s3cret-77",
        ],
    );
    let unreadable = report["unreadable_files"].as_array().unwrap();
    assert_eq!(unreadable.len(), 1, "{unreadable:?}");
    assert!(unreadable[0].as_str().unwrap().contains("missing.yaml"));
    assert!(stdout.contains("not read:"), "{stdout}");
    let store = probe::store::Store::open_existing(&dir.path().join("store")).unwrap();
    let run = run_id(&report);
    let mut item_from_dictionary = 0;
    let mut id_from_dictionary = 0;
    for row in store.interactions_of(run).unwrap() {
        let case: probe::model::TestCase = store.get(row.case.digest()).unwrap();
        // A changed request keeps the origins of the one it changed; look at built ones.
        if case.strategy != probe::model::Strategy::Nominal {
            continue;
        }
        if case.origins.get("body.item") == Some(&probe::model::ValueOrigin::Dictionary) {
            assert_eq!(case.body.as_ref().unwrap().value["item"], "dictionary-mug");
            item_from_dictionary += 1;
        }
        if case.origins.get("orderId") == Some(&probe::model::ValueOrigin::Dictionary) {
            assert_eq!(case.parameters[0].value, 424242);
            id_from_dictionary += 1;
        }
    }
    assert!(
        item_from_dictionary > 10,
        "body places from the dictionary: {item_from_dictionary}"
    );
    assert!(
        id_from_dictionary > 10,
        "parameters from the dictionary: {id_from_dictionary}"
    );

    // The run keeps the plan and the dictionary it read, the credential searched out of
    // them, and lists them; the file it could not read is not among them.
    let start: probe::model::RunStart = store.get(run.digest()).unwrap();
    let keys: Vec<&String> = start.inputs.keys().collect();
    let dict_key = format!("dictionary:{}", dict.display());
    let plan_key = format!("plan:{}", plan.display());
    assert_eq!(keys, [&dict_key, &plan_key], "{keys:?}");
    let kept_plan = store.get_blob(start.inputs[&plan_key]).unwrap();
    assert_eq!(kept_plan, std::fs::read(&plan).unwrap());
    let kept_dict = String::from_utf8(store.get_blob(start.inputs[&dict_key]).unwrap()).unwrap();
    assert!(
        kept_dict.contains("body.item: [dictionary-mug]"),
        "{kept_dict}"
    );
    assert!(!kept_dict.contains("tok-s3cret-77"), "{kept_dict}");
    assert!(
        kept_dict.contains(probe::model::SECRET_PLACEHOLDER),
        "{kept_dict}"
    );
    let store_dir = dir.path().join("store");
    let store_arg = store_dir.to_str().unwrap();
    let show = crate::util::run(crate::util::probe(dir.path()).args([
        "show",
        "--store",
        store_arg,
        &run.to_string(),
    ]));
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains(&dict_key) && shown.contains(&plan_key),
        "{shown}"
    );
    // gc keeps them: the run still reads its inputs after a collection.
    drop(store);
    let gc = crate::util::run(
        crate::util::probe(dir.path()).args(["store", "gc", "--store", store_arg]),
    );
    assert!(
        gc.status.success(),
        "{}",
        String::from_utf8_lossy(&gc.stderr)
    );
    let store = probe::store::Store::open_existing(&store_dir).unwrap();
    assert_eq!(store.get_blob(start.inputs[&plan_key]).unwrap(), kept_plan);
}
