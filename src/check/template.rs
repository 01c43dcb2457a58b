//! The message of a user check: text with `{expression}` places filled from the exchange
//! (`"answered {response.status} without X-Request-Id"`); `{{` and `}}` are braces.

use super::exchange::Reads;
use super::expr::{display, position_in, Bound, ExprError, Expression, Position};

#[derive(Debug)]
enum Part {
    Text(String),
    Place(Expression),
}

/// A parsed message template.
#[derive(Debug)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parses `source`; an expression that does not compile is an error at its place.
    pub fn parse(source: &str) -> Result<Template, ExprError> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut rest = source;
        let mut offset = 0;
        while let Some(at) = rest.find(['{', '}']) {
            text.push_str(&rest[..at]);
            let brace = &rest[at..];
            if brace.starts_with("{{") || brace.starts_with("}}") {
                text.push_str(&brace[..1]);
                rest = &brace[2..];
                offset += at + 2;
                continue;
            }
            if brace.starts_with('}') {
                return Err(ExprError {
                    at: position_in(source, offset + at),
                    message: "a `}` closes no place; write `}}` for a brace".into(),
                });
            }
            let Some(end) = brace.find('}') else {
                return Err(ExprError {
                    at: position_in(source, offset + at),
                    message: "a `{` opens a place that is never closed; write `{{` for a brace"
                        .into(),
                });
            };
            let inner = &brace[1..end];
            let expression = Expression::compile(inner).map_err(|e| {
                let start = position_in(source, offset + at + 1);
                ExprError {
                    at: Position {
                        line: start.line + e.at.line - 1,
                        column: if e.at.line == 1 {
                            start.column + e.at.column - 1
                        } else {
                            e.at.column
                        },
                    },
                    message: e.message,
                }
            })?;
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            parts.push(Part::Place(expression));
            rest = &brace[end + 1..];
            offset += at + end + 1;
        }
        text.push_str(rest);
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(Template { parts })
    }

    /// The parts of the exchange model its places read.
    pub fn reads(&self) -> Reads {
        let mut reads = Reads::default();
        for part in &self.parts {
            if let Part::Place(e) = part {
                reads.add(e.reads());
            }
        }
        reads
    }

    /// A template of fixed text.
    pub fn literal(text: &str) -> Template {
        Template {
            parts: vec![Part::Text(text.to_string())],
        }
    }

    /// The message for one exchange; a place that cannot be evaluated shows `?`.
    pub fn render(&self, bound: &Bound<'_>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Place(e) => match e.evaluate(bound) {
                    Ok(v) => out.push_str(&display(&v)),
                    Err(_) => out.push('?'),
                },
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn places_are_filled_and_braces_doubled_are_braces() {
        let model = json!({"response": {"status": 500, "body": {"a": [1]}}});
        let bound = Bound::new(&model);
        let t = Template::parse("got {response.status} {{literal}} {response.body.a}").unwrap();
        assert_eq!(t.render(&bound), "got 500 {literal} [1]");
        let t = Template::parse("{response.body.missing}!").unwrap();
        assert_eq!(t.render(&bound), "?!");
    }

    #[test]
    fn a_bad_place_is_an_error_at_its_column() {
        let e = Template::parse("got {respons.status}").unwrap_err();
        assert_eq!(e.at, Position { line: 1, column: 6 });
        assert!(Template::parse("got {response.status").is_err());
        assert!(Template::parse("got }").is_err());
    }
}
