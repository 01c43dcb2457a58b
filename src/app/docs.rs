//! `probe docs [TOPIC]`: the user's guides, built into the binary, so that someone who
//! installed probe without its sources can read what a hint points to. Hints and help say
//! `probe docs TOPIC`, never a path in the source tree.
//!
//! Depends on: `cli`, `error`, `app::out`.

use crate::cli::DocsOpts;
use crate::error::CliError;

use super::Out;

/// One guide: the name `probe docs` takes, and its Markdown text (docs/NAME.md).
pub struct Topic {
    pub name: &'static str,
    pub text: &'static str,
}

macro_rules! topics {
    ($($name:literal),* $(,)?) => {
        /// Every guide for users, in the order `probe docs` lists them. The guides for
        /// probe's own developers (architecture, benchmarks, design notes) stay in the
        /// source tree.
        pub const TOPICS: &[Topic] = &[
            $(Topic { name: $name, text: include_str!(concat!("../../docs/", $name, ".md")) },)*
        ];
    };
}

topics!(
    "cli",
    "settings",
    "exit-codes",
    "ci",
    "oracles",
    "checks",
    "security",
    "series",
    "shrinking",
    "pinpointing",
    "plan",
    "dictionaries",
    "recheck",
    "replay",
    "determinism",
    "store",
    "remote-store",
    "partitions",
    "har",
    "html-report",
    "report-json",
    "events",
);

/// The guide named `name`, if there is one.
pub fn topic(name: &str) -> Option<&'static Topic> {
    TOPICS.iter().find(|t| t.name == name)
}

/// The title of a guide: its first `# ` heading.
fn title(topic: &Topic) -> &'static str {
    topic
        .text
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .unwrap_or("")
}

/// Runs `probe docs`: the list of guides, or one guide's Markdown on standard output.
pub fn exec_docs(opts: &DocsOpts, out: &mut Out<'_>) -> Result<u8, CliError> {
    let Some(name) = &opts.topic else {
        let width = TOPICS.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in TOPICS {
            writeln!(out, "{:width$}  {}", t.name, title(t))?;
        }
        writeln!(out, "\nread one with `probe docs TOPIC`")?;
        return Ok(crate::exit::OK);
    };
    let wanted = name.trim_end_matches(".md");
    let Some(found) = topic(wanted) else {
        return Err(CliError::Usage {
            message: format!("no guide is named `{name}`"),
            hint: Some(
                match crate::text::closest(wanted, TOPICS.iter().map(|t| t.name)) {
                    Some(close) => format!("did you mean `{close}`? `probe docs` lists them all"),
                    None => "`probe docs` lists them all".to_owned(),
                },
            ),
        });
    };
    out.with(|w| w.write_all(found.text.as_bytes()))?;
    Ok(crate::exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every user guide in docs/ is a topic, so a new guide cannot be forgotten.
    #[test]
    fn every_user_guide_is_a_topic() {
        let developers = ["architecture", "benchmarks", "design-notes", "field-trials"];
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/docs");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                let name = path.file_stem().unwrap().to_str().unwrap();
                assert!(
                    developers.contains(&name) || topic(name).is_some(),
                    "docs/{name}.md is neither a `probe docs` topic nor a developers' guide"
                );
            }
        }
        assert!(TOPICS.iter().all(|t| !title(t).is_empty()));
    }

    /// What probe tells a user to read is a topic it can show: no hint, help text or
    /// setting names a path in the source tree.
    #[test]
    fn hints_name_topics_not_files() {
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
        let mut named = Vec::new();
        let mut stack = vec![std::path::PathBuf::from(src)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                // A file's tests come last; what they say is for developers.
                let shipped = text.split("#[cfg(test)]").next().unwrap_or("");
                for (n, line) in shipped.lines().enumerate() {
                    let code = line.trim_start();
                    if code.starts_with("//") || code.contains("include_str!") {
                        continue;
                    }
                    if let Some(at) = code.find("probe docs ") {
                        let word: String = code[at + "probe docs ".len()..]
                            .chars()
                            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                            .collect();
                        if !word.is_empty() && word != "topic" {
                            assert!(
                                topic(&word).is_some(),
                                "{}:{}: `probe docs {word}` is no topic",
                                path.display(),
                                n + 1
                            );
                        }
                    }
                    if code.contains("docs/") && code.contains(".md") && code.contains('"') {
                        named.push(format!("{}:{}: {}", path.display(), n + 1, code));
                    }
                }
            }
        }
        assert!(
            named.is_empty(),
            "text for users names files:\n{}",
            named.join("\n")
        );
    }
}
