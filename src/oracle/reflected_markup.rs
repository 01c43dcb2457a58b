//! `reflected_markup` (F201, reflected XSS): a request sent markup that a browser runs
//! (`<script>`, or a tag with an `on…=` handler) and the reply, served as HTML, holds it as it
//! was sent, unescaped. probe's fuzzing strategy sends such strings among its awkward values;
//! this judges the evidence only: the exact string in an HTML body. A JSON reply that echoes
//! it is not reported (a browser does not run JSON), nor an HTML one that escapes it
//! (`&lt;script&gt;`).

use super::*;

pub const INFO: OracleInfo = OracleInfo {
    name: "reflected_markup",
    code: Some("F201"),
    version: 1,
    severity: Severity::High,
    title: "markup a request sent came back unescaped in an HTML reply",
    setting: declared(
        "checks.reflected_markup",
        Kind::Bool,
        "true",
        "F201: a string with a <script> tag or an on…= handler that a request sent is in an HTML reply, unescaped",
    ),
};

/// Event-handler attributes that run script with no user action, or with the commonest
/// ones: the ones injected markup uses.
const HANDLERS: &[&str] = &[
    "onerror", "onload", "onclick", "onmouseover", "onmouseenter", "onfocus", "onblur",
    "onchange", "oninput", "onsubmit", "onkeydown", "onkeyup", "ontoggle", "onbegin",
    "onanimationstart", "onpointerover", "onstart",
];

/// How much of a reply body is searched.
const SEARCHED: usize = 64 * 1024;

pub struct ReflectedMarkup;

impl Judge for ReflectedMarkup {
    fn info(&self) -> &'static OracleInfo {
        &INFO
    }

    fn reply(&self, ctx: &Context<'_>, _: &Oracles) -> Option<Observation> {
        check(ctx)
    }
}

/// Whether `text` holds markup a browser runs: a `<script` tag, or a tag with an event
/// handler attribute (`<img src=x onerror=...>`).
fn runs_in_a_browser(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    if lower.contains("<script") {
        return true;
    }
    let Some(open) = lower.find('<') else {
        return false;
    };
    let tag = &lower[open..];
    let end = tag.find('>').unwrap_or(tag.len());
    let inside = &tag[..end];
    inside.split_whitespace().skip(1).any(|attribute| {
        attribute
            .split_once('=')
            .is_some_and(|(name, _)| HANDLERS.contains(&name))
    })
}

fn check(ctx: &Context<'_>) -> Option<Observation> {
    let html = ctx
        .response
        .header("content-type")
        .map(str::to_ascii_lowercase)
        .is_some_and(|t| t.starts_with("text/html") || t.starts_with("application/xhtml+xml"));
    if !html {
        return None;
    }
    let body = ctx.body?;
    let body = &body[..body.len().min(SEARCHED)];
    let markup = normalise::sent_strings_up_to(ctx.exchange.case, usize::MAX)
        .into_iter()
        .filter(|s| runs_in_a_browser(s))
        .find(|s| memchr::memmem::find(body, s.as_bytes()).is_some())?;
    let name = ctx.exchange.operation.key.name();
    let shown: String = markup.chars().take(60).collect();
    Some(per_operation(
        &INFO,
        &name,
        "",
        format!(
            "{name} answered {} with an HTML page that holds `{shown}`, sent in the request, unescaped: a browser would run it",
            ctx.response.status
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::runs_in_a_browser;

    #[test]
    fn markup_that_runs_is_told_from_markup_that_does_not() {
        assert!(runs_in_a_browser("<script>alert(1)</script>"));
        assert!(runs_in_a_browser("x\"><ScRiPt src=//a>"));
        assert!(runs_in_a_browser("<img src=x onerror=alert(1)>"));
        assert!(runs_in_a_browser("<svg onload=alert(1)>"));
        assert!(!runs_in_a_browser("<>&"));
        assert!(!runs_in_a_browser("<b>bold</b>"));
        assert!(!runs_in_a_browser("a < b and on=1"));
        assert!(!runs_in_a_browser("<a href=x online=yes>"));
    }
}
