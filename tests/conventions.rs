//! The conventions of a command-line tool: shell completions and the manual page (pinned as
//! snapshots), `--version` with the commit, colour (`--color`, `NO_COLOR`,
//! `CLICOLOR_FORCE`, off through pipes), and the project file (`--config`, `probe.toml`
//! found upwards to the repository's top, `spec`, `url` and `store` in it, flags winning).

use std::path::Path;
use std::process::{Command, Output};

use probe::fixture::{demo, RunningFixture};

use crate::util::{code, demo_spec, read_json};

/// The built `probe` in `dir` with nothing of the machine's environment that changes its
/// output: no `PROBE_*` variable, no colour variable, 100 columns, progress off.
fn probe(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_probe"));
    cmd.current_dir(dir);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PROBE_") {
            cmd.env_remove(name);
        }
    }
    cmd.env("COLUMNS", "100")
        .env("PROBE_NO_PROGRESS", "1")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    cmd
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the probe binary runs");
    eprintln!("--- stdout\n{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("--- stderr\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

// ---------------------------------------------------------------------------------------
// Completions and the manual page

/// `probe completions SHELL`, pinned: a changed command line shows in the script's diff.
fn completions(shell: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = run(probe(dir.path()).args(["completions", shell]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let script = stdout(&out);
    // Every command is offered. (The tests' build has the hidden test tool `store synth`,
    // feature `dev-tools`, which clap_complete lists too: a user's build has no such
    // command, so its script has none.)
    for command in ["run", "demo", "recheck", "replay", "completions", "man"] {
        assert!(script.contains(command), "{shell}: no `{command}`");
    }
    script
}

#[test]
fn completions_for_bash_are_pinned() {
    let script = completions("bash");
    assert!(
        script.contains("complete -F _probe"),
        "bash registers the function"
    );
    insta::with_settings!({description => "probe completions bash", omit_expression => true}, {
        insta::assert_snapshot!("completions_bash", script);
    });
}

#[test]
fn completions_for_zsh_are_pinned() {
    let script = completions("zsh");
    assert!(script.starts_with("#compdef probe"), "zsh's first line");
    insta::with_settings!({description => "probe completions zsh", omit_expression => true}, {
        insta::assert_snapshot!("completions_zsh", script);
    });
}

#[test]
fn completions_for_fish_are_pinned() {
    let script = completions("fish");
    assert!(script.contains("complete -c probe"), "fish's completions");
    insta::with_settings!({description => "probe completions fish", omit_expression => true}, {
        insta::assert_snapshot!("completions_fish", script);
    });
}

#[test]
fn completions_for_powershell_and_elvish_are_written() {
    completions("powershell");
    completions("elvish");
    let dir = tempfile::tempdir().unwrap();
    let out = run(probe(dir.path()).args(["completions", "tcsh"]));
    assert_eq!(code(&out), 2, "an unknown shell is a usage error");
    assert!(stderr(&out).contains("bash"), "the shells are listed");
}

/// The version in a page's title and its VERSION section changes with every commit:
/// `[VERSION]` in the snapshots.
const VERSION_FILTERS: [(&str, &str); 2] = [
    (r#"probe \d+\.\d+\.\d+[^"]*"#, "probe [VERSION]"),
    (r"(?m)^v\d+\.\d+\.\d+.*$", "v[VERSION]"),
];

#[test]
fn the_manual_page_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(probe(dir.path()).arg("man"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH probe 1"), "a roff page of section 1");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(page.contains(section), "no {section}");
    }
    insta::with_settings!({
        description => "probe man",
        omit_expression => true,
        filters => VERSION_FILTERS.to_vec(),
    }, {
        insta::assert_snapshot!("man_probe", page);
    });
    let out = run(probe(dir.path()).args(["man", "run"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH probe-run 1"), "the page of `probe run`");
    assert!(page.contains("\\-\\-budget"), "its options");
    insta::with_settings!({
        description => "probe man run",
        omit_expression => true,
        filters => VERSION_FILTERS.to_vec(),
    }, {
        insta::assert_snapshot!("man_run", page);
    });
}

#[test]
fn every_manual_page_is_written_to_a_directory_and_a_wrong_command_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(probe(dir.path()).args(["man", "--dir", "man1"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut pages: Vec<String> = std::fs::read_dir(dir.path().join("man1"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for page in [
        "probe.1",
        "probe-run.1",
        "probe-store.1",
        "probe-store-gc.1",
    ] {
        assert!(pages.iter().any(|p| p == page), "no {page} in {pages:?}");
    }
    assert!(
        !pages
            .iter()
            .any(|p| p.contains("synth") || p.contains("help")),
        "{pages:?}"
    );
    let gc = std::fs::read_to_string(dir.path().join("man1/probe-store-gc.1")).unwrap();
    assert!(gc.contains("probe store gc"), "the words that call it");

    let out = run(probe(dir.path()).args(["man", "store", "collect"]));
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("`probe store` has no command `collect`"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("gc"), "its commands are listed");
}

// ---------------------------------------------------------------------------------------
// --version

/// The build script, whose `commit` an optimised build's version names.
#[allow(dead_code)]
#[path = "../build.rs"]
mod build_script;

/// A dev build (this one) says so and names no commit: reading one would rebuild the crate
/// at every commit.
#[test]
fn a_dev_builds_version_says_it_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(probe(dir.path()).arg("--version"));
    assert_eq!(code(&out), 0);
    let package = env!("CARGO_PKG_VERSION");
    assert_eq!(stdout(&out), format!("probe {package} (dev build)\n"));
}

/// What an optimised build names: the commit checked out and its date, read by the build
/// script from the clone (as here, and in CI); nothing from a directory inside a clone
/// that is not its top (a crates tarball unpacked in someone's repository).
#[test]
fn the_build_script_reads_the_commit_and_its_date_from_the_clone_only() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "log",
            "-1",
            "--format=%h %cs",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let mut watched = Vec::new();
    let read = build_script::commit(repo, &mut |p| watched.push(p.to_path_buf()));
    let Some(expected) = git else {
        assert_eq!(read, None, "no git, no commit");
        return;
    };
    let (hash, date) = read.expect("the clone's commit");
    assert_eq!(format!("{hash} {date}"), expected);
    assert!(
        watched.iter().any(|p| p.ends_with("HEAD")),
        "HEAD is watched: {watched:?}"
    );
    assert_eq!(
        build_script::commit(&repo.join("src"), &mut |_| {}),
        None,
        "a directory below the top is not a clone of probe"
    );
}

// ---------------------------------------------------------------------------------------
// Colour

const RED: &str = "\u{1b}[1;31m";
const YELLOW: &str = "\u{1b}[33m";
const RESET: &str = "\u{1b}[0m";

/// The seeded demo's summary, through a pipe, with `args` and `env` added.
fn demo_summary(args: &[&str], env: &[(&str, &str)]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = run(probe(dir.path())
        .args([
            "demo",
            "--seed",
            "7",
            "--requests",
            "120",
            "--workers",
            "1",
            "--report",
            "report.json",
        ])
        .args(args)
        .envs(env.iter().copied()));
    assert_eq!(code(&out), 1, "the demo's planted faults are found");
    (stdout(&out), read_json(&dir.path().join("report.json")))
}

/// Text with the colour escapes taken out, and what varies from run to run.
fn plain(text: &str) -> String {
    let escapes = regex::Regex::new("\u{1b}\\[[0-9;]*m").unwrap();
    let varies =
        regex::Regex::new(r"127\.0\.0\.1:\d+|\b[0-9a-f]{8,64}\b| in \d+(\.\d)?m?s \(\d+/s\)")
            .unwrap();
    varies
        .replace_all(&escapes.replace_all(text, ""), "[VARIES]")
        .into_owned()
}

#[test]
fn colour_is_off_through_a_pipe_and_under_no_color() {
    for (args, env) in [
        (&[][..], &[][..]),
        (&[][..], &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")][..]),
        (&["--color", "never"][..], &[("CLICOLOR_FORCE", "1")][..]),
    ] {
        let (summary, _) = demo_summary(args, env);
        assert!(
            !summary.contains('\u{1b}'),
            "{args:?} {env:?}: an escape in\n{summary}"
        );
        assert!(summary.contains("\nfindings: "), "{summary}");
    }
}

/// Under `--color always` or `CLICOLOR_FORCE`, the verdict is red and each finding's tag is
/// in its severity's colour; nothing else of the text changes.
#[test]
fn colour_marks_the_verdict_and_severities_when_asked_for() {
    let (uncoloured, report) = demo_summary(&[], &[]);
    for (args, env) in [
        (&["--color", "always"][..], &[("NO_COLOR", "1")][..]),
        (&[][..], &[("CLICOLOR_FORCE", "1")][..]),
    ] {
        let (summary, _) = demo_summary(args, env);
        assert!(
            summary.contains(&format!("\n{RED}findings: ")),
            "{args:?} {env:?}: the verdict is not red in\n{summary}"
        );
        // The demo's 500 is a high finding, its undeclared status code a medium one.
        assert!(
            summary.contains(&format!("{RED}[F100 server_error]{RESET}")),
            "{summary}"
        );
        let medium = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["severity"] == "medium")
            .expect("the demo has a medium finding");
        let tag = match medium["code"].as_str() {
            Some(code) => format!("[{code} {}]", medium["oracle"].as_str().unwrap()),
            None => format!("[{}]", medium["oracle"].as_str().unwrap()),
        };
        assert!(
            summary.contains(&format!("{YELLOW}{tag}{RESET}")),
            "{tag} not yellow in\n{summary}"
        );
        assert_eq!(
            plain(&summary),
            plain(&uncoloured),
            "colour changed more than the colour"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The project file

/// A repository (a directory holding `.git`) with `probe.toml` at its top naming the
/// document, the URL and the store, and a directory two levels down to run probe from.
struct Project {
    root: tempfile::TempDir,
    _api: RunningFixture,
}

impl Project {
    fn new(extra: &str) -> Project {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".git")).unwrap();
        std::fs::create_dir_all(root.path().join("services/pets")).unwrap();
        std::fs::copy(demo_spec(), root.path().join("openapi.yaml")).unwrap();
        let api = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
        std::fs::write(
            root.path().join("probe.toml"),
            format!(
                "spec = \"openapi.yaml\"\nurl = \"{}\"\nstore = \"store\"\n{extra}\n[send]\ntimeout = \"5s\"\n",
                api.base_url()
            ),
        )
        .unwrap();
        Project { root, _api: api }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn deep(&self) -> std::path::PathBuf {
        self.root.path().join("services/pets")
    }
}

#[test]
fn probe_toml_is_found_upwards_and_gives_the_spec_the_url_and_the_store() {
    let project = Project::new(
        "[[check]]\nname = \"never-999\"\noperations = [\"listPets\"]\nexpect = \"response.status == 999\"\n",
    );
    let out = run(probe(&project.deep()).args([
        "run",
        "--requests",
        "30",
        "--seed",
        "1",
        "--report",
        "report.json",
    ]));
    assert_eq!(code(&out), 1, "the demo API's faults are found");
    let report = read_json(&project.deep().join("report.json"));
    assert_eq!(report["run"]["api_title"], "probe demo pet shop");
    // Its `[[check]]` tables are judged.
    assert_eq!(
        report["checks"][0]["name"], "never-999",
        "{}",
        report["checks"]
    );
    assert!(report["checks"][0]["failed"].as_u64().unwrap() > 0);
    // The store is the file's, beside it, not one in the current directory.
    assert!(project.path().join("store").is_dir(), "no store at the top");
    assert!(!project.deep().join(".probe").exists());
    // And the other commands find the same store.
    let out = run(probe(&project.deep()).args(["log", "--json"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 1, "the run is listed");
    // Flags win over the file.
    let out = run(probe(&project.deep()).args([
        "run",
        "--requests",
        "10",
        "--url",
        "http://127.0.0.1:1",
        "--store",
        "mine",
    ]));
    assert_eq!(code(&out), 3, "nothing listens on port 1: {}", stderr(&out));
    assert!(project.deep().join("mine").is_dir(), "--store wins");
}

#[test]
fn config_names_a_project_file_anywhere_and_its_paths_are_read_from_its_directory() {
    let project = Project::new("");
    let elsewhere = tempfile::tempdir().unwrap();
    let config = project.path().join("probe.toml");
    let out = run(probe(elsewhere.path()).args([
        "run",
        "--config",
        config.to_str().unwrap(),
        "--requests",
        "20",
    ]));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(project.path().join("store").is_dir());
    assert!(!elsewhere.path().join(".probe").exists());

    let out = run(probe(elsewhere.path()).args(["log", "--config", "no-such.toml"]));
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("--config no-such.toml: no such file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn outside_a_repository_only_the_current_directory_is_looked_in() {
    let project = Project::new("");
    std::fs::remove_dir(project.path().join(".git")).unwrap();
    let out = run(probe(&project.deep()).args(["run", "--requests", "10"]));
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("probe run needs --spec (or `spec = …` in probe.toml)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_wrong_key_in_probe_toml_names_the_file_and_the_key() {
    let project = Project::new("");
    let toml = project.path().join("probe.toml");
    let text = std::fs::read_to_string(&toml).unwrap();

    std::fs::write(&toml, text.replace("spec = \"openapi.yaml\"", "spec = 3")).unwrap();
    let out = run(probe(&project.deep()).args(["run", "--requests", "10"]));
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("../../probe.toml: `spec` must be a non-empty string"),
        "{}",
        stderr(&out)
    );

    std::fs::write(&toml, text.replace("spec =", "sepc =")).unwrap();
    let out = run(probe(&project.deep()).args(["run", "--requests", "10"]));
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("../../probe.toml: `sepc` is neither a group of settings")
            && stderr(&out).contains("did you mean `spec`?"),
        "{}",
        stderr(&out)
    );

    std::fs::write(&toml, text.replace("timeout", "timeot")).unwrap();
    let out = run(probe(&project.deep()).args(["run", "--requests", "10"]));
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown setting `send.timeot` (from ../../probe.toml)"),
        "{}",
        stderr(&out)
    );
}
