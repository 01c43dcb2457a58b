//! probe at a terminal: the real binary in a pseudo-terminal (rexpect), as a person runs it,
//! with the progress bar on. Every other test runs the binary through pipes, where no bar
//! is drawn; a bar that waited on a lock the process held hung every run at a terminal
//! while all of those passed.
//!
//! Each test bounds the command's time: a command that does not end in time is killed and
//! the test fails saying so. Each checks that the command did run at a terminal: the
//! terminal's line discipline turns every `\n` the command writes into `\r\n`, which a pipe
//! never does.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::wait::WaitStatus;
use probe::fixture::{demo, fast, RunningFixture};

use crate::util::{code, probe, run, run_id, Campaign};

/// What a command did at the terminal.
struct AtTerminal {
    /// Everything it wrote to the terminal (standard output and standard error).
    screen: String,
    exit: i32,
    took: Duration,
}

/// Runs `probe args…` in `dir` in a new pseudo-terminal, with the progress bar on, and waits
/// at most `limit` for it to end.
fn at_terminal(dir: &Path, args: &[&str], limit: Duration) -> AtTerminal {
    at_terminal_with(dir, args, &[], limit)
}

/// [`at_terminal`] with the variables `env` set, and no colour variable of the machine's.
fn at_terminal_with(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> AtTerminal {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_probe"));
    cmd.current_dir(dir)
        .args(args)
        .env_remove("PROBE_NO_PROGRESS")
        .env_remove("PROBE_STORE")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .env("TERM", "xterm-256color")
        .env("COLUMNS", "100")
        .envs(env.iter().copied());
    let started = Instant::now();
    let mut session = rexpect::session::spawn_command(cmd, Some(limit.as_millis() as u64))
        .expect("a pseudo-terminal and the probe binary");
    let screen = match session.exp_eof() {
        Ok(screen) => screen,
        Err(e) => {
            // Dropping the session kills the command.
            panic!(
                "`probe {}` did not end at a terminal within {limit:?}: {e}",
                args.join(" ")
            )
        }
    };
    let status = session.process().wait().expect("the command's status");
    let took = started.elapsed();
    let exit = match status {
        WaitStatus::Exited(_, code) => code,
        other => panic!("`probe {}` ended by {other:?}", args.join(" ")),
    };
    eprintln!("--- at the terminal ({took:?}, exit {exit})\n{screen}");
    assert!(
        screen.contains("\r\n"),
        "`probe {}` was not run at a terminal: no line came through a terminal's line \
         discipline",
        args.join(" ")
    );
    AtTerminal { screen, exit, took }
}

/// Whether the screen shows the progress bar: the erase-line sequence (`ESC[2K`) indicatif
/// redraws it with, which nothing else probe writes uses. (A bar without a request limit
/// is a spinner with no `[===` frame; colour is `ESC[…m`.)
fn drew_a_bar(screen: &str) -> bool {
    screen.contains("\u{1b}[2K")
}

fn store_arg(dir: &Path) -> String {
    dir.join("store").to_str().expect("utf-8 path").to_owned()
}

/// A small run of the demo API through pipes, for the commands that look at a run.
fn recorded_demo_run(dir: &Path, fixture: &RunningFixture) -> serde_json::Value {
    let campaign = Campaign {
        spec: &crate::util::demo_spec(),
        url: &fixture.base_url(),
        seed: 3,
        workers: 2,
        requests: 300,
    };
    let (out, report) = campaign.run(dir, &[]);
    assert_eq!(code(&out), 1, "the demo API's faults are found");
    report
}

#[test]
fn demo_finishes_in_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_arg(dir.path());
    let t = at_terminal(
        dir.path(),
        &["demo", "--store", &store],
        Duration::from_secs(60),
    );
    assert_eq!(t.exit, 1, "the demo finds its planted faults");
    assert!(t.screen.contains("try next:"), "the demo's last lines");
    assert!(t.screen.contains("findings"), "the summary");
}

/// At a terminal the verdict and each finding's severity are coloured; `NO_COLOR` and
/// `--color never` turn colour off there too.
#[test]
fn the_summary_is_coloured_at_a_terminal_unless_no_color_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_arg(dir.path());
    let args = [
        "demo",
        "--requests",
        "100",
        "--seed",
        "3",
        "--store",
        &store,
    ];
    let red = "\u{1b}[1;31m";
    let t = at_terminal(dir.path(), &args, Duration::from_secs(60));
    assert_eq!(t.exit, 1);
    assert!(
        t.screen.contains(&format!("{red}findings: ")),
        "the verdict is not red at a terminal"
    );
    assert!(t.screen.contains(&format!("{red}[F100 server_error]")));
    let off = [
        at_terminal_with(
            dir.path(),
            &args,
            &[("NO_COLOR", "1")],
            Duration::from_secs(60),
        ),
        at_terminal(
            dir.path(),
            &[&args[..], &["--color", "never"]].concat(),
            Duration::from_secs(60),
        ),
    ];
    for t in off {
        assert_eq!(t.exit, 1);
        assert!(t.screen.contains("findings: "), "the summary");
        assert!(
            !t.screen.contains(red),
            "coloured under NO_COLOR or --color never"
        );
    }
}

#[test]
fn a_run_with_a_budget_ends_in_a_terminal_when_its_budget_does() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("fast.yaml");
    std::fs::write(&spec, fast::DOCUMENT).unwrap();
    let fixture = RunningFixture::start(fast::router(Duration::from_millis(1))).unwrap();
    let store = store_arg(dir.path());
    let budget = Duration::from_secs(10);
    let t = at_terminal(
        dir.path(),
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--url",
            &fixture.base_url(),
            "--budget",
            "10s",
            "--seed",
            "1",
            "--store",
            &store,
        ],
        budget + Duration::from_secs(2),
    );
    assert!(
        t.took >= budget - Duration::from_secs(1),
        "the run used its budget"
    );
    assert!(matches!(t.exit, 0 | 1), "exit {}", t.exit);
    assert!(
        drew_a_bar(&t.screen),
        "a progress bar was drawn at the terminal"
    );
    assert!(t.screen.contains("requests"), "the summary");
}

/// Ctrl-C typed at the terminal ends a run the way its budget would: the summary is
/// printed, the run is recorded as interrupted, and the exit code is 130.
#[test]
fn ctrl_c_at_a_terminal_ends_a_run_with_its_summary() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("fast.yaml");
    std::fs::write(&spec, fast::DOCUMENT).unwrap();
    let fixture = RunningFixture::start(fast::router(Duration::from_millis(20))).unwrap();
    let store = store_arg(dir.path());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_probe"));
    cmd.current_dir(dir.path())
        .args(["run", "--spec", spec.to_str().unwrap(), "--url"])
        .arg(fixture.base_url())
        .args(["--budget", "60s", "--seed", "1", "--store", &store])
        .env_remove("PROBE_NO_PROGRESS")
        .env_remove("PROBE_STORE")
        .env("TERM", "xterm-256color");
    let mut session =
        rexpect::session::spawn_command(cmd, Some(20_000)).expect("a pseudo-terminal");
    // Once requests go out (the bar counts them), the user presses Ctrl-C.
    session
        .exp_regex("[1-9][0-9]* requests")
        .expect("the bar counts requests");
    let pressed = Instant::now();
    session.send_control('c').expect("Ctrl-C typed");
    let screen = session
        .exp_eof()
        .expect("the run ends within 20 s of Ctrl-C");
    let took = pressed.elapsed();
    let status = session.process().wait().expect("the command's status");
    eprintln!("--- at the terminal ({took:?})\n{screen}");
    assert!(
        matches!(status, WaitStatus::Exited(_, 130)),
        "exit 130 after Ctrl-C: {status:?}"
    );
    assert!(screen.contains("\r\n"), "run at a terminal");
    assert!(screen.contains("interrupted"), "it says so");
    assert!(screen.contains("run "), "the summary names the run");
}

#[test]
fn recheck_diff_and_replay_finish_in_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = RunningFixture::start(demo::router(demo::Faults::ALL)).unwrap();
    let first = recorded_demo_run(dir.path(), &fixture);
    let second = recorded_demo_run(dir.path(), &fixture);
    let store = store_arg(dir.path());
    let (a, b) = (run_id(&first).to_string(), run_id(&second).to_string());
    let limit = Duration::from_secs(30);

    let recheck = at_terminal(
        dir.path(),
        &[
            "--store",
            &store,
            "recheck",
            &a,
            "--set",
            "checks.server_error=true",
        ],
        limit,
    );
    assert!(matches!(recheck.exit, 0 | 1), "exit {}", recheck.exit);

    let diff = at_terminal(dir.path(), &["--store", &store, "diff", &a, &b], limit);
    assert!(matches!(diff.exit, 0 | 1), "exit {}", diff.exit);

    let line = first["findings"][0]["replay"]
        .as_str()
        .expect("a finding with its replay line");
    let target = line.trim_start_matches("probe replay ");
    let replay = at_terminal(
        dir.path(),
        &[
            "--store",
            &store,
            "replay",
            target,
            "--url",
            &fixture.base_url(),
        ],
        limit,
    );
    assert!(
        replay.screen.contains("reproduced"),
        "the planted fault is still there"
    );
}

#[test]
fn the_event_stream_on_standard_output_finishes_in_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_arg(dir.path());
    let t = at_terminal(
        dir.path(),
        &[
            "demo",
            "--requests",
            "400",
            "--events",
            "-",
            "--store",
            &store,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(t.exit, 1);
    let events = t
        .screen
        .lines()
        .filter(|l| l.contains("\"event\":\"interaction\""))
        .count();
    assert!(events >= 400, "every request's event: {events}");
    assert!(t.screen.contains("\"event\":\"run_ended\""));
}

/// Through a pipe, with no terminal, the stream's buffer flushes many times over a run; a
/// process that kept standard output locked stopped at the first flush (about 170 requests).
#[test]
fn the_event_stream_on_standard_output_is_written_whole_through_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.ndjson");
    let mut cmd = probe(dir.path());
    cmd.args([
        "demo",
        "--requests",
        "1000",
        "--events",
        "-",
        "--store",
        &store_arg(dir.path()),
    ])
    .stdout(Stdio::from(std::fs::File::create(&events).unwrap()))
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let limit = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`probe demo --events - > file` did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1));
    let text = std::fs::read_to_string(&events).unwrap();
    let interactions = text
        .lines()
        .filter(|l| l.contains("\"event\":\"interaction\""))
        .count();
    assert!(interactions >= 1000, "{interactions} interaction events");
    assert!(text.lines().last().unwrap().contains("run_ended"));
    // And the summary went to standard error, which is no terminal here.
    let out = run(probe(dir.path()).args(["--store", &store_arg(dir.path()), "log"]));
    assert_eq!(code(&out), 0);
}
